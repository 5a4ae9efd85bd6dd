package io.mirrorspark.kafka;

import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Maps held in the JVM's system properties and made only of JDK classes, so that every copy of
 * mirrorspark's classes (Spark loads the jar in its own class loader, py4j calls reach another)
 * sees the same state: the driver-side stores of runs, figures and executors the Python driver drains.
 */
public final class JvmShared {

    private JvmShared() {
    }

    @SuppressWarnings("unchecked")
    public static <V> ConcurrentHashMap<String, V> map(String name) {
        Properties props = System.getProperties();
        synchronized (props) {
            Object found = props.get(name);
            if (found == null) {
                found = new ConcurrentHashMap<String, V>();
                props.put(name, found);
            }
            return (ConcurrentHashMap<String, V>) found;
        }
    }
}
