import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.mirror.MirrorCheckpointConnector;
import org.apache.kafka.connect.mirror.MirrorHeartbeatConnector;
import org.apache.kafka.connect.mirror.MirrorMakerConfig;
import org.apache.kafka.connect.mirror.MirrorSourceConnector;
import org.apache.kafka.connect.mirror.SourceAndTarget;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;

/**
 * What MirrorMaker 2's own configuration classes say of each mm2.properties given: one line per
 * file, "VERDICT", the file, "ACCEPT" or "REFUSE" and why. MirrorMakerConfig reads the file as
 * dedicated mode does, and each pair's worker config must build. MM2 copies a flow's records when
 * its MirrorSourceConnector validates; a checkpoint or heartbeat connector that does not validate
 * is logged by MM2, which runs without it (noted after ACCEPT).
 */
public final class Mm2ConfigCheck {
    private Mm2ConfigCheck() {
    }

    public static void main(String[] args) {
        for (String file : args) {
            System.out.println("VERDICT\t" + file + "\t" + check(file));
        }
    }

    static String check(String file) {
        try {
            Properties props = Utils.loadProps(file);
            Map<String, String> settings = Utils.propsToStringMap(props);
            // Plugins found through their ServiceLoader manifests, not by scanning every class of the
            // classpath for each file (seconds each): what is checked here loads classes by name.
            settings.putIfAbsent("plugin.discovery", "service_load");
            MirrorMakerConfig config = new MirrorMakerConfig(settings);
            StringBuilder notes = new StringBuilder();
            for (SourceAndTarget pair : config.clusterPairs()) {
                new DistributedConfig(config.workerConfig(pair));
                for (Class<? extends Connector> kind : List.of(MirrorSourceConnector.class,
                        MirrorCheckpointConnector.class, MirrorHeartbeatConnector.class)) {
                    Map<String, String> conf = config.connectorBaseConfig(pair, kind);
                    boolean enabled = Boolean.parseBoolean(conf.getOrDefault("enabled", "false").trim());
                    if (kind != MirrorHeartbeatConnector.class && !enabled) {
                        continue;
                    }
                    String error = firstError(kind, conf);
                    if (error == null) {
                        continue;
                    }
                    String where = pair + " " + kind.getSimpleName() + " " + error;
                    if (kind == MirrorSourceConnector.class) {
                        return "REFUSE\t" + where;  // the flow's records are not copied
                    }
                    // MM2 logs the failed connector and runs the rest: the records are still copied
                    notes.append(notes.length() == 0 ? "" : "; ").append(where);
                }
            }
            return "ACCEPT\t" + notes;
        } catch (Exception | LinkageError e) {
            return "REFUSE\t" + e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' ');
        }
    }

    static String firstError(Class<? extends Connector> kind, Map<String, String> conf) throws Exception {
        Config result = kind.getDeclaredConstructor().newInstance().validate(conf);
        for (ConfigValue value : result.configValues()) {
            if (!value.errorMessages().isEmpty()) {
                return value.name() + ": " + value.errorMessages().get(0);
            }
        }
        return null;
    }
}
