package io.mirrorspark.regex;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

import org.junit.jupiter.api.Test;

/**
 * The Java regex corpus (tests/data/java_regex/corpus.tsv) holds java.util.regex's verdicts: the
 * Python side checks mirrorspark's translation against the same file, so the two agree with each
 * other only if this test keeps the file true to Java.
 */
final class JavaRegexCorpusTest {

    private static final Path CORPUS = Path.of("..", "..", "tests", "data", "java_regex", "corpus.tsv");

    /** The input field's escapes: \\uXXXX, \\n, \\r, \\t, and a backslash before any other character. */
    static String decode(String text) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c != '\\' || i + 1 >= text.length()) {
                out.append(c);
                continue;
            }
            char next = text.charAt(++i);
            switch (next) {
                case 'u' -> {
                    out.append((char) Integer.parseInt(text.substring(i + 1, i + 5), 16));
                    i += 4;
                }
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                default -> out.append(next);
            }
        }
        return out.toString();
    }

    static String verdict(String pattern, String input) {
        try {
            return Pattern.compile(pattern).matcher(decode(input)).matches() ? "match" : "nomatch";
        } catch (PatternSyntaxException e) {
            return "invalid";
        }
    }

    @Test
    void everyRecordedVerdictIsJavasOwn() throws IOException {
        assertTrue(Files.isRegularFile(CORPUS), "the corpus is read from the repository: " + CORPUS.toAbsolutePath());
        List<String> wrong = new ArrayList<>();
        int checked = 0;
        for (String line : Files.readAllLines(CORPUS, StandardCharsets.UTF_8)) {
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] fields = line.split("\t", -1);
            assertEquals(3, fields.length, "pattern, input, verdict: " + line);
            String actual = verdict(fields[0], fields[1]);
            if (!actual.equals(fields[2])) {
                wrong.add(line + " (java: " + actual + ")");
            }
            checked++;
        }
        assertTrue(checked > 300, "the corpus holds " + checked + " lines");
        assertEquals(List.of(), wrong);
    }

    @Test
    void inputsDecodeTheirEscapes() {
        assertEquals("a\nb\u00e9\\", decode("a\\nb\\u00e9\\\\"));
    }
}
