package io.mirrorspark;

/**
 * The JVM unit tests' one assertion, shared by every {@code *UnitTests} class: each runs in a JVM of
 * its own (tests/unit/test_jvm_units.py), stops at the first failed check with the check's words on
 * standard error, and ends by printing how many checks passed.
 */
public final class UnitChecks {
    private static int passed;

    private UnitChecks() {
    }

    public static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
        passed++;
    }

    /** The last line of a test class's main: the count the Python side looks for. */
    public static void done() {
        System.out.println("ok: " + passed + " checks");
    }
}
