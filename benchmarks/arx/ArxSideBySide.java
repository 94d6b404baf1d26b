// ppdm benchmark harness: times ARX's optimal full-domain search on Adult in the same run as ppdm.
// Our own code (Apache-2.0, ppdm); it calls ARX's public API only and needs an ARX build on the
// classpath (ARX itself is not part of ppdm — see benchmarks/README.md). Compiled and run by
// benchmarks/bench_anonymize.py --arx CLASSPATH; prints one JSON object per configuration.
//
// usage: java ArxSideBySide ADULT_DIR REPEAT k:SUP:METRIC[:lL] ...   (METRIC = dm | loss)

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.criteria.DistinctLDiversity;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

public class ArxSideBySide {

    static final String[] QIS = {"age", "sex", "race", "marital-status", "education", "native-country",
                                 "workclass", "occupation"};

    static Data load(String dir, boolean sensitive) throws Exception {
        Data data = Data.create(new File(dir, "adult.csv"), StandardCharsets.UTF_8, ';');
        for (String qi : QIS) {
            File h = new File(dir, "adult_hierarchy_" + qi + ".csv");
            data.getDefinition().setAttributeType(qi, Hierarchy.create(h, StandardCharsets.UTF_8, ';'));
        }
        data.getDefinition().setAttributeType("salary-class", sensitive ? AttributeType.SENSITIVE_ATTRIBUTE
                                                                        : AttributeType.INSENSITIVE_ATTRIBUTE);
        return data;
    }

    public static void main(String[] args) throws Exception {
        String dir = args[0];
        int repeat = Integer.parseInt(args[1]);
        for (int a = 2; a < args.length; a++) {
            String[] p = args[a].split(":");
            int k = Integer.parseInt(p[0]);
            double sup = Double.parseDouble(p[1]);
            String metric = p[2];
            int l = p.length > 3 ? Integer.parseInt(p[3].substring(1)) : 0;
            double best = Double.MAX_VALUE;
            ARXResult result = null;
            for (int r = 0; r < repeat; r++) {
                Data data = load(dir, l > 0);  // a Data object is anonymized once
                ARXConfiguration config = ARXConfiguration.create();
                config.addPrivacyModel(new KAnonymity(k));
                if (l > 0) {
                    config.addPrivacyModel(new DistinctLDiversity("salary-class", l));
                }
                config.setSuppressionLimit(sup);
                config.setQualityModel(metric.equals("dm") ? Metric.createDiscernabilityMetric()
                                                           : Metric.createLossMetric());
                long t0 = System.nanoTime();
                result = new ARXAnonymizer().anonymize(data, config);
                best = Math.min(best, (System.nanoTime() - t0) / 1e9);
            }
            int[] levels = result.getGlobalOptimum().getTransformation();
            String[] names = result.getGlobalOptimum().getQuasiIdentifyingAttributes();
            StringBuilder lv = new StringBuilder("{");
            for (int i = 0; i < names.length; i++) {
                lv.append(i > 0 ? ", " : "").append('"').append(names[i]).append("\": ").append(levels[i]);
            }
            lv.append('}');
            System.out.println("{\"k\": " + k + ", \"suppression\": " + sup + ", \"metric\": \"" + metric
                               + "\", \"l\": " + l + ", \"seconds\": " + best + ", \"levels\": " + lv
                               + ", \"score\": \"" + result.getGlobalOptimum().getHighestScore() + "\"}");
        }
    }
}
