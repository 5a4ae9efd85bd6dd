package io.mirrorspark.control;

import com.fasterxml.jackson.databind.node.ArrayNode;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka's producer for the control plane's writes (heartbeats, offset syncs, checkpoints, the
 * lease's and range logs' records), with the cluster's settings as MM2 gives them. Sends are
 * asynchronous; their outcomes queue here until Python collects them ({@link #outcomes}) and calls the
 * delivery callbacks on its own thread, as librdkafka's poll does.
 */
public final class ProducerBridge implements AutoCloseable {
    private final KafkaProducer<byte[], byte[]> producer;
    private final ConcurrentLinkedQueue<Object[]> done = new ConcurrentLinkedQueue<>();
    /** A send of this thread that failed inside {@code send()} waiting for metadata (see {@link #sendAll}). */
    private final ThreadLocal<ClientError> waitedOut = new ThreadLocal<>();
    private final AtomicLong inFlight = new AtomicLong();
    private final Object drained = new Object();

    public ProducerBridge(Map<String, String> settings) {
        Map<String, Object> conf = new HashMap<>(settings);
        conf.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        conf.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        // A send waits for the topic's metadata at most this long (Kafka's default: a minute): the caller
        // is a control-plane thread that other tasks wait on, and librdkafka's produce never blocks. The
        // record then fails through its callback, as one librdkafka could not deliver. (A transactional
        // producer keeps Kafka's default: initTransactions waits as long.)
        if (!conf.containsKey(ProducerConfig.TRANSACTIONAL_ID_CONFIG)) {
            conf.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        }
        try {
            this.producer = new KafkaProducer<>(conf);
        } catch (RuntimeException e) {
            throw ClientError.of("creating a producer", e);
        }
    }

    /**
     * Send a record; {@code id} comes back with its outcome. {@code partition} -1: the partitioner's
     * choice; {@code timestamp} -1: now; {@code headers}: packed as {@link RecordCodec#headers} reads them.
     */
    public void send(long id, String topic, int partition, byte[] key, byte[] value, byte[] headers, long timestamp) {
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, partition < 0 ? null : partition,
            timestamp < 0 ? null : timestamp, key, value, RecordCodec.headers(headers));
        inFlight.incrementAndGet();
        Thread caller = Thread.currentThread();
        try {
            producer.send(record, (metadata, error) -> {
                if (error == null) {
                    done.add(new Object[] {id, 0, false, "", metadata.partition(), metadata.offset()});
                } else {
                    ClientError e = ClientError.of("sending to " + topic, error);
                    done.add(new Object[] {id, e.code(), e.retriable(), e.getMessage(), partition, -1L});
                    if (Thread.currentThread() == caller && error instanceof TimeoutException) {
                        waitedOut.set(e); // failed within send(): no metadata for the topic in max.block.ms
                    }
                }
                if (inFlight.decrementAndGet() == 0) {
                    synchronized (drained) {
                        drained.notifyAll();
                    }
                }
            });
        } catch (RuntimeException e) {
            inFlight.decrementAndGet();
            throw ClientError.of("sending to " + topic, e);
        }
    }

    /**
     * Many sends in one call (a py4j round trip costs more than a send): records Python packed as
     * {@link RecordCodec#sends} reads them, each sent as {@link #send} sends it, in order.
     */
    public void sendAll(byte[] packed) {
        Map<String, ClientError> refused = new HashMap<>(); // a topic whose metadata did not come within max.block.ms
        for (RecordCodec.Send one : RecordCodec.sends(packed)) {
            ClientError e = refused.get(one.topic());
            if (e == null) {
                waitedOut.remove();
                try {
                    send(one.id(), one.topic(), one.partition(), one.key(), one.value(), one.headers(), one.timestamp());
                    if (waitedOut.get() != null) {
                        refused.put(one.topic(), waitedOut.get()); // the next ones would wait as long again
                    }
                    continue;
                } catch (ClientError failed) { // this record only: its outcome says so, the others go on
                    e = failed;
                }
            }
            done.add(new Object[] {one.id(), e.code(), e.retriable(), e.getMessage(), one.partition(), -1L});
        }
    }

    /** The outcomes since the last call: {@code [[id, code, retriable, text, partition, offset]]}, code 0 for a record written. */
    public String outcomes() {
        ArrayNode out = AdminBridge.JSON.createArrayNode();
        for (Object[] row = done.poll(); row != null; row = done.poll()) {
            out.addArray().add((Long) row[0]).add((Integer) row[1]).add((Boolean) row[2]).add((String) row[3])
                .add((Integer) row[4]).add((Long) row[5]);
        }
        return out.toString();
    }

    /** Wait up to {@code timeoutMs} for every record sent to be answered; the number still waiting. */
    public long flush(int timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        synchronized (drained) {
            while (inFlight.get() > 0) {
                long left = (deadline - System.nanoTime()) / 1_000_000L;
                if (left <= 0) {
                    break;
                }
                try {
                    drained.wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        return inFlight.get();
    }

    /**
     * {@link #sendAll}, {@link #flush} and {@link #outcomes} in one call: {@code [left, outcomes]}. A
     * control-plane write (a heartbeat a second per cluster pair, offset syncs, checkpoints) is sent
     * and waited for at once; three py4j round trips each were most of an idle flow's calls into this JVM.
     */
    public String sendAndFlush(byte[] packed, int timeoutMs) {
        sendAll(packed);
        long left = flush(timeoutMs);
        return "[" + left + "," + outcomes() + "]";
    }

    /** Start the producer's transactions: fences an earlier holder of its transactional id, aborting what it left open. */
    public void initTransactions() {
        try {
            producer.initTransactions();
        } catch (RuntimeException e) {
            throw ClientError.of("initialising transactions", e);
        }
    }

    @Override
    public void close() {
        producer.close(Duration.ofSeconds(5));
    }
}
