package io.mirrorspark.sink;

import java.io.IOException;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.producer.Producer;

/**
 * Every Kafka client a task's writer uses, and how it gives each back: the JVM's pooled clients
 * ({@link #POOLED}) in the product, Kafka's mock clients in the writer's tests.
 */
interface WriterClients {

    /** The flow's shared producer (at-least-once mode); paired with {@link #releaseProducer}. */
    Producer<byte[], byte[]> acquireProducer(WriteSettings settings);

    /** {@code failed}: the task saw a send fail, the producer is retired. */
    void releaseProducer(WriteSettings settings, Producer<byte[], byte[]> producer, boolean failed);

    /** The transactional producer of task {@code task} of the flow (exactly-once mode). */
    Transactions.Entry acquireTransactional(WriteSettings settings, int task);

    /** A target partition's committed progress for a writer of batch {@code batch} ({@code fresh}: read from
     *  the target, nothing kept used). */
    Progress progress(WriteSettings settings, String topic, int partition, boolean fresh, long batch)
        throws IOException;

    /** The task of batch {@code batch} committed {@code progress} for the partition: what the target holds now. */
    void committed(WriteSettings settings, String topic, int partition, Progress progress, long batch);

    /** What is kept of the partition's progress may be behind the target (a failed or cut task). */
    void forget(WriteSettings settings, String topic, int partition);

    /** {@code broken}: it failed, was fenced or is mid-transaction, it is closed. */
    void releaseTransactional(WriteSettings settings, Transactions.Entry entry, boolean broken);

    /** A consumer of the target cluster to read a partition's tail with ({@link TargetTail} closes it). */
    Consumer<byte[], byte[]> tailConsumer(WriteSettings settings, String topic, int partition);

    /** The clients of this JVM's pools ({@link Producers}, {@link Transactions}), and a new consumer per tail. */
    WriterClients POOLED = new WriterClients() {
        @Override
        public Producer<byte[], byte[]> acquireProducer(WriteSettings settings) {
            return Producers.acquire(settings.flow, settings.producer);
        }

        @Override
        public void releaseProducer(WriteSettings settings, Producer<byte[], byte[]> producer, boolean failed) {
            Producers.release(settings.producer, producer, failed);
        }

        @Override
        public Transactions.Entry acquireTransactional(WriteSettings settings, int task) {
            return Transactions.acquire(settings, task);
        }

        @Override
        public Progress progress(WriteSettings settings, String topic, int partition, boolean fresh, long batch)
            throws IOException {
            return Transactions.progress(settings, topic, partition, fresh, batch);
        }

        @Override
        public void committed(WriteSettings settings, String topic, int partition, Progress progress, long batch) {
            Transactions.remember(settings, topic, partition, progress, batch);
        }

        @Override
        public void forget(WriteSettings settings, String topic, int partition) {
            Transactions.forget(settings, topic, partition);
        }

        @Override
        public void releaseTransactional(WriteSettings settings, Transactions.Entry entry, boolean broken) {
            Transactions.release(settings, entry, broken);
        }

        @Override
        public Consumer<byte[], byte[]> tailConsumer(WriteSettings settings, String topic, int partition) {
            return TargetTail.consumer(settings.producer, topic, partition);
        }
    };
}
