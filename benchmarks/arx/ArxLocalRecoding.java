// ppdm benchmark harness: ARX's local transformation on Adult, as its GUI runs it, for a side-by-side
// check of ppdm's --local-recoding. Our own code (Apache-2.0, ppdm); it calls ARX's public API only
// and needs an ARX build on the classpath (ARX is not part of ppdm — see benchmarks/README.md).
// Compiled beside ArxSideBySide (whose loading it shares) and run by benchmarks/arx_local_recoding.py.
//
// usage: java ArxLocalRecoding ADULT_DIR K ITERATIONS GS_SEARCH GS_STEPS OUT.csv [ADAPTION LIMIT]
//
// The GUI's recipe (WorkerAnonymize, WorkerLocalRecode in ITERATIVE mode): k-anonymity, ARX's Loss
// with gs-factor GS_SEARCH and a suppression limit of 1 - 1/ITERATIONS for the optimal search, then
// ARXResult.optimizeIterativeFast(output, 1/ITERATIONS, GS_STEPS). Writes the output (every row, in
// the input's order, ';'-separated, suppressed values as '*') to OUT.csv and prints one JSON line:
// the global node, the rows suppressed before and after the local transformation. With ADAPTION and
// LIMIT: the GUI's "fixpoint adaptive" mode instead — suppression limit LIMIT, then
// ARXResult.optimizeIterative(output, GS_STEPS, Integer.MAX_VALUE, ADAPTION).

import java.io.File;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXListener;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

public class ArxLocalRecoding {

    static int outliers(DataHandle h) {
        int n = 0;
        for (int row = 0; row < h.getNumRows(); row++) {
            n += h.isOutlier(row) ? 1 : 0;
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        String dir = args[0];
        int k = Integer.parseInt(args[1]);
        int iterations = Integer.parseInt(args[2]);
        double gsSearch = Double.parseDouble(args[3]);
        double gsSteps = Double.parseDouble(args[4]);
        File out = new File(args[5]);
        double adaption = args.length > 7 ? Double.parseDouble(args[6]) : -1d;
        double limit = args.length > 7 ? Double.parseDouble(args[7]) : 1d - 1d / iterations;
        Data data = ArxSideBySide.load(dir, null);
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new KAnonymity(k));
        config.setSuppressionLimit(limit);
        config.setQualityModel(Metric.createLossMetric(gsSearch));
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        DataHandle output = result.getOutput();
        int[] levels = result.getGlobalOptimum().getTransformation();
        String[] names = result.getGlobalOptimum().getQuasiIdentifyingAttributes();
        int before = outliers(output);
        long t0 = System.nanoTime();
        ARXListener quiet = new ARXListener() {
            @Override
            public void progress(double progress) {
                // Empty by design
            }
        };
        if (adaption >= 0d) {
            result.optimizeIterative(output, gsSteps, Integer.MAX_VALUE, adaption, quiet);
        } else {
            result.optimizeIterativeFast(output, 1d / iterations, gsSteps, quiet);
        }
        double sec = (System.nanoTime() - t0) / 1e9;
        int after = outliers(output);
        output.save(out, ';');
        StringBuilder lv = new StringBuilder("{");
        for (int i = 0; i < names.length; i++) {
            lv.append(i > 0 ? ", " : "").append('"').append(names[i]).append("\": ").append(levels[i]);
        }
        lv.append('}');
        System.out.println("{\"k\": " + k + ", \"iterations\": " + iterations + ", \"gs_search\": " + gsSearch
                           + ", \"gs_steps\": " + gsSteps + ", \"levels\": " + lv + ", \"suppressed_before\": "
                           + before + ", \"suppressed_after\": " + after + ", \"local_seconds\": " + sec + "}");
    }
}
