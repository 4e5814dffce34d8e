package org.warpdp.test;

import java.util.Locale;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.junit.runner.Description;
import org.junit.runner.JUnitCore;
import org.junit.runner.Result;
import org.junit.runner.notification.Failure;
import org.junit.runner.notification.RunListener;

/** Runs the shim's JUnit 4 tests, one line per test, and exits non-zero on any failure. */
public final class RunTests {
    static final Class<?>[] TESTS = {ChunkPlannerTest.class, IsolationTest.class, ClientApiTest.class,
        GklReferenceTest.class, DropInTest.class, InputChecksTest.class, NoServerTest.class,
        DoublePrecisionTest.class, SplittingTest.class, SecurityTest.class, GklCrossCheckTest.class,
        XdropSeedExtTest.class};

    // Held here: java.util.logging keeps loggers only weakly, and a collected one forgets its level.
    private static final Logger[] QUIET = {Logger.getLogger("org.warpdp"), Logger.getLogger("com.intel.gkl")};

    private RunTests() {
    }

    public static void main(String[] args) {
        // The tests provoke warnings on purpose (no server, wrong token); -Dwarpdp.test.verbose=true shows them.
        if (!Boolean.getBoolean("warpdp.test.verbose")) {
            for (Logger logger : QUIET) {
                logger.setLevel(Level.SEVERE);
            }
        }
        JUnitCore junit = new JUnitCore();
        junit.addListener(new RunListener() {
            private long start;
            private boolean failed;

            @Override
            public void testStarted(Description d) {
                start = System.nanoTime();
                failed = false;
            }

            @Override
            public void testFailure(Failure f) {
                failed = true;
                System.out.println("FAIL  " + f.getDescription().getDisplayName() + "\n" + f.getTrace());
            }

            @Override
            public void testAssumptionFailure(Failure f) {
                failed = true;
                System.out.println("SKIP  " + f.getDescription().getDisplayName() + ": " + f.getMessage());
            }

            @Override
            public void testFinished(Description d) {
                if (!failed) {
                    System.out.printf(Locale.ROOT, "ok    %s (%.2f s)%n", d.getDisplayName(),
                            (System.nanoTime() - start) / 1e9);
                }
            }
        });
        Result result = junit.run(TESTS);
        System.out.printf(Locale.ROOT, "%d tests: %d passed, %d failed, %d skipped, %d ignored in %.1f s%n",
                result.getRunCount(), result.getRunCount() - result.getFailureCount()
                        - result.getAssumptionFailureCount(), result.getFailureCount(),
                result.getAssumptionFailureCount(), result.getIgnoreCount(), result.getRunTime() / 1e3);
        System.exit(result.wasSuccessful() && result.getRunCount() > 0 ? 0 : 1);
    }
}
