package io.mirrorspark.sink;

import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;

import io.mirrorspark.schema.SchemaIds;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** What every task of one write needs: the flow's name, producer settings, column positions. */
final class WriteSettings implements Serializable {
    private static final long serialVersionUID = 1L;
    static final String PRODUCER_PREFIX = "kafka.";

    final String flow;
    final HashMap<String, String> producer;
    final int topic;
    final int partition;
    final int key;
    final int value;
    final int headers;
    final int timestamp;
    final int offset;
    /** The timestamp column is Spark's timestamp (microseconds, a Kafka source's row as it comes), not
     *  epoch milliseconds. */
    final boolean timestampMicros;
    /** Option {@code remoteTopics} (lines source TAB remote): the topic column holds source topics, each
     *  written to its remote topic, and rows of a topic not listed are not copied. Null: the topic
     *  column names the target topic. Renaming here, not in a Spark projection, keeps the source's rows
     *  unchanged on their way in (no per-row lookup in generated code). */
    final HashMap<String, String> remoteTopics;
    /** Per target partition ("topic NUL partition"): target offsets {from, to} an interrupted
     *  attempt of this batch already wrote (option {@code resume}, lines topic TAB partition TAB from TAB to). */
    final HashMap<String, long[]> resume;
    /** Real-time mode: which start of the query {@code resume} belongs to (option {@code resumeRun}, new at
     *  each start; empty: not given), so that its batches share one {@link ResumeLedger}. */
    final String resumeRun;
    /** Per target partition: its end when this batch started (option {@code retryFrom}, lines topic TAB
     *  partition TAB offset). A retried task attempt compares from there: what an earlier attempt of
     *  the same task wrote is not sent again. */
    final HashMap<String, Long> retryFrom;
    /** Active/active on the same names (options {@code provenanceSource}, {@code provenanceTarget}):
     *  the flow's cluster aliases, or null for a flow that neither marks nor skips ({@link Provenance}). */
    final String provenanceSource;
    final String provenanceTarget;
    /** Exactly-once mode (option {@code exactlyOnce}): transactional writes, one producer per task with
     *  {@code transactional.id = <transactionalIdPrefix><task>}, and the flow's progress committed as
     *  offsets of the {@code progressGroup} on the target ({@link Transactions}). */
    final boolean exactlyOnce;
    final String transactionalIdPrefix;
    final String progressGroup;
    /** Micro-batches (options {@code writeRun}, {@code writeBatch}): the start of the flow's query this
     *  batch belongs to (new at each start) and its batch id; null and -1 when not given. What a JVM
     *  knows of a partition's exactly-once progress is used only within one start ({@link Transactions}). */
    final String writeRun;
    final long writeBatch;
    /** Real-time mode with exactly-once (option {@code transactionMs}): the longest a task's transaction
     *  stays open before its records are committed, visible to {@code read_committed} consumers; 0: at
     *  the batch's end and the bounds of {@link TaskTransactions#due} only (micro-batches). */
    final long transactionMs;
    /** Per target topic: {@code <source topic id>|<remote topic id>} as the driver last saw them (option
     *  {@code topicIds}, lines source topic TAB source id TAB remote id, an id not known yet empty).
     *  Exactly-once progress committed for other ids (a topic re-created since) is not used ({@link Progress#heldFor}). */
    final HashMap<String, String> topicIds;
    /** The flow's lease (options {@code leaseGroup}, {@code leaseInstance}): its group on the target and
     *  the instance whose tasks these are; an executor outside the driver's JVM fences itself by it
     *  ({@link LeaseWatch}). Null: no lease. */
    final String leaseGroup;
    final String leaseInstance;
    /** The flow's Connect transformations and predicates (option {@code transforms}, lines key TAB value of
     *  its {@code transforms*} and {@code predicates*} settings); null: none ({@link Transforms}). */
    final HashMap<String, String> transforms;
    /** Option {@code schemaIds}: the source -> target schema id map keys and values in the Confluent wire
     *  format are rewritten with (ADR 0028); null: records are copied as they are. */
    final SchemaIds schemaIds;
    /** Option {@code schemaTopics} (one target topic per line): the topics whose records are rewritten with
     *  {@link #schemaIds}; MM2's heartbeats (whose MM2 format also starts with a 0 byte) are never among them. */
    final java.util.HashSet<String> schemaTopics;

    private WriteSettings(String flow, HashMap<String, String> producer, StructType schema,
                          HashMap<String, long[]> resume, HashMap<String, Long> retryFrom,
                          String provenanceSource, String provenanceTarget, String transactionalIdPrefix,
                          String progressGroup, HashMap<String, String> remoteTopics, String resumeRun,
                          HashMap<String, String> topicIds, String leaseGroup, String leaseInstance,
                          HashMap<String, String> transforms, SchemaIds schemaIds,
                          java.util.HashSet<String> schemaTopics, String writeRun, long writeBatch,
                          long transactionMs) {
        this.flow = flow;
        this.transactionMs = transactionMs;
        this.writeRun = writeRun;
        this.writeBatch = writeBatch;
        this.schemaIds = schemaIds;
        this.schemaTopics = schemaTopics;
        this.transforms = transforms;
        this.leaseGroup = leaseGroup;
        this.leaseInstance = leaseInstance;
        this.topicIds = topicIds;
        this.remoteTopics = remoteTopics;
        this.exactlyOnce = transactionalIdPrefix != null;
        this.transactionalIdPrefix = transactionalIdPrefix;
        this.progressGroup = progressGroup;
        this.producer = producer;
        this.resume = resume;
        this.resumeRun = resumeRun;
        this.retryFrom = retryFrom;
        this.provenanceSource = provenanceSource;
        this.provenanceTarget = provenanceTarget;
        this.topic = column(schema, "topic");
        this.partition = column(schema, "partition");
        this.key = column(schema, "key");
        this.value = column(schema, "value");
        this.headers = column(schema, "headers");
        this.timestamp = column(schema, "timestamp");
        this.offset = column(schema, "offset");
        this.timestampMicros = schema.fields()[timestamp].dataType().equals(DataTypes.TimestampType);
    }

    static WriteSettings from(StructType schema, Map<String, String> options) {
        String flow = options.get("flow");
        if (flow == null || flow.isEmpty()) {
            throw new IllegalArgumentException("the mirrorspark sink needs the option 'flow'");
        }
        HashMap<String, String> producer = new HashMap<>();
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (e.getKey().startsWith(PRODUCER_PREFIX)) {
                producer.put(e.getKey().substring(PRODUCER_PREFIX.length()), e.getValue());
            }
        }
        if (!producer.containsKey("bootstrap.servers")) {
            throw new IllegalArgumentException("the mirrorspark sink needs the option 'kafka.bootstrap.servers'");
        }
        String source = options.get("provenanceSource");
        String target = options.get("provenanceTarget");
        if ((source == null) != (target == null) || (source != null && (source.isEmpty() || target.isEmpty()))) {
            throw new IllegalArgumentException("the mirrorspark sink needs both 'provenanceSource' and "
                + "'provenanceTarget' (cluster aliases) or neither");
        }
        String prefix = null;
        String group = null;
        if ("true".equals(options.get("exactlyOnce"))) {
            prefix = options.get("transactionalIdPrefix");
            group = options.get("progressGroup");
            if (prefix == null || prefix.isEmpty() || group == null || group.isEmpty()) {
                throw new IllegalArgumentException("the mirrorspark sink's exactly-once mode needs the options "
                    + "'transactionalIdPrefix' and 'progressGroup'");
            }
        }
        String leaseGroup = options.get("leaseGroup");
        String leaseInstance = options.get("leaseInstance");
        if ((leaseGroup == null) != (leaseInstance == null)
            || (leaseGroup != null && (leaseGroup.isEmpty() || leaseInstance.isEmpty()))) {
            throw new IllegalArgumentException("the mirrorspark sink needs both 'leaseGroup' and 'leaseInstance' "
                + "or neither");
        }
        HashMap<String, String> remotes = remoteTopics(options.get("remoteTopics"));
        return new WriteSettings(flow, producer, schema, resume(options.get("resume")),
            retryFrom(options.get("retryFrom")), source, target, prefix, group, remotes,
            options.getOrDefault("resumeRun", ""),
            topicIds(options.get("topicIds"), remotes), leaseGroup, leaseInstance,
            transforms(options.get("transforms")),
            options.containsKey("schemaIds") ? SchemaIds.parse(options.get("schemaIds")) : null,
            lines(options.get("schemaTopics")), emptyAsNull(options.get("writeRun")),
            Long.parseLong(options.getOrDefault("writeBatch", "-1")),
            Long.parseLong(options.getOrDefault("transactionMs", "0")));
    }

    private static String emptyAsNull(String option) {
        return option == null || option.isEmpty() ? null : option;
    }

    /** An option of one name per line; empty when absent. */
    static java.util.HashSet<String> lines(String option) {
        java.util.HashSet<String> out = new java.util.HashSet<>();
        if (option != null) {
            for (String line : option.split("\n")) {
                if (!line.isEmpty()) {
                    out.add(line);
                }
            }
        }
        return out;
    }

    /** Option {@code transforms}: lines key TAB value; null when absent or empty. */
    static HashMap<String, String> transforms(String option) {
        if (option == null || option.isEmpty()) {
            return null;
        }
        HashMap<String, String> out = new HashMap<>();
        for (String line : option.split("\n")) {
            int tab = line.indexOf('\t');
            if (tab <= 0) {
                throw new IllegalArgumentException("the mirrorspark sink's 'transforms' option has a bad line: " + line);
            }
            out.put(line.substring(0, tab), line.substring(tab + 1));
        }
        return out;
    }

    /** The ids a target topic's exactly-once progress must have been committed for; null: not told. */
    String topicsOf(String target) {
        return topicIds.get(target);
    }

    /** Option {@code topicIds} per target topic (each source topic's remote topic, or itself without {@code remoteTopics}). */
    static HashMap<String, String> topicIds(String option, Map<String, String> remoteTopics) {
        HashMap<String, String> out = new HashMap<>();
        if (option == null || option.isEmpty()) {
            return out;
        }
        for (String line : option.split("\n")) {
            String[] f = line.split("\t", -1);
            if (f.length != 3 || f[0].isEmpty() || !id(f[1]) || !id(f[2])) {
                throw new IllegalArgumentException("the mirrorspark sink's 'topicIds' option has a bad line: " + line);
            }
            String target = remoteTopics == null ? f[0] : remoteTopics.get(f[0]);
            if (target != null) {
                out.put(target, f[1] + "|" + f[2]);
            }
        }
        return out;
    }

    /** A topic id as a Kafka client writes it (base64, standard as librdkafka's or URL-safe as Java's), or empty. */
    private static boolean id(String text) {
        return text.matches("[A-Za-z0-9+/_=-]*");
    }

    static HashMap<String, String> remoteTopics(String option) {
        if (option == null) {
            return null;
        }
        HashMap<String, String> out = new HashMap<>();
        for (String line : option.split("\n")) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split("\t");
            if (f.length != 2 || f[0].isEmpty() || f[1].isEmpty()) {
                throw new IllegalArgumentException("the mirrorspark sink's 'remoteTopics' option has a bad line: " + line);
            }
            out.put(f[0], f[1]);
        }
        return out;
    }

    static String key(String topic, int partition) {
        return topic + '\u0000' + partition;
    }

    static HashMap<String, long[]> resume(String option) {
        HashMap<String, long[]> out = new HashMap<>();
        if (option == null || option.isEmpty()) {
            return out;
        }
        for (String line : option.split("\n")) {
            String[] f = line.split("\t");
            if (f.length != 4) {
                throw new IllegalArgumentException("the mirrorspark sink's 'resume' option has a bad line: " + line);
            }
            out.put(key(f[0], Integer.parseInt(f[1])), new long[] {Long.parseLong(f[2]), Long.parseLong(f[3])});
        }
        return out;
    }

    static HashMap<String, Long> retryFrom(String option) {
        HashMap<String, Long> out = new HashMap<>();
        if (option == null || option.isEmpty()) {
            return out;
        }
        for (String line : option.split("\n")) {
            String[] f = line.split("\t");
            if (f.length != 3) {
                throw new IllegalArgumentException("the mirrorspark sink's 'retryFrom' option has a bad line: " + line);
            }
            out.put(key(f[0], Integer.parseInt(f[1])), Long.parseLong(f[2]));
        }
        return out;
    }

    private static int column(StructType schema, String name) {
        for (int i = 0; i < schema.fields().length; i++) {
            if (schema.fields()[i].name().equals(name)) {
                return i;
            }
        }
        throw new IllegalArgumentException("the mirrorspark sink needs a column '" + name + "', got " + schema.simpleString());
    }
}
