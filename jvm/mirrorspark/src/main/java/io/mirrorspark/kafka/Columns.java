package io.mirrorspark.kafka;

import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** A schema as DataSource V2 columns (what {@code Table.columns()} returns since {@code schema()} was deprecated). */
public final class Columns {
    private Columns() {
    }

    public static Column[] of(StructType schema) {
        StructField[] fields = schema.fields();
        Column[] out = new Column[fields.length];
        for (int i = 0; i < fields.length; i++) {
            out[i] = Column.create(fields[i].name(), fields[i].dataType(), fields[i].nullable());
        }
        return out;
    }
}
