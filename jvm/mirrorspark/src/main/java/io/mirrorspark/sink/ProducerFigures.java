package io.mirrorspark.sink;

/** What the driver's metrics read of the sink's producers in this JVM ({@link Producers} stays package-private). */
public final class ProducerFigures {

    private ProducerFigures() {
    }

    /** Lines {@code flow TAB bytes}: the buffer memory the flow's pooled producers have free. */
    public static String bufferAvailable() {
        return Producers.bufferAvailable();
    }
}
