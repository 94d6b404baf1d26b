// ppdm benchmark harness: times ARX's optimal full-domain search on Adult in the same run as ppdm.
// Our own code (Apache-2.0, ppdm); it calls ARX's public API only and needs an ARX build on the
// classpath (ARX itself is not part of ppdm — see benchmarks/README.md). Compiled and run by
// benchmarks/bench_anonymize.py --arx CLASSPATH; prints one JSON object per configuration.
//
// usage: java ArxSideBySide ADULT_DIR WARMUP REPEAT k:SUP:METRIC[:lL][:tT@ATTR] ...   (METRIC = dm | loss | loss@G)
//
//   loss@G   ARX's Loss with generalization/suppression factor G (Metric.createLossMetric(G))
//
//   lL       distinct l-diversity on salary-class
//   tT@ATTR  t-closeness with the hierarchical ground distance (HierarchicalDistanceTCloseness) on ATTR,
//            with ATTR's hierarchy adult_hierarchy_ATTR.csv; ATTR becomes the sensitive attribute and
//            leaves the quasi-identifiers if it was one (salary-class is then insensitive)
//
// Timing: every run starts from a freshly loaded Data object (hierarchies read, and the CSV rows read
// into ARX's input handle by data.getHandle() — Data.create only opens an iterator, which
// anonymize would otherwise drain inside the clock); not timed, as ARX anonymizes a Data object
// once. The clock covers ARXAnonymizer.anonymize only (ARX's encoding, lattice and search). WARMUP untimed runs, then REPEAT timed ones; all times are
// printed (the caller takes median and minimum).

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.criteria.DistinctLDiversity;
import org.deidentifier.arx.criteria.HierarchicalDistanceTCloseness;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

public class ArxSideBySide {

    static final String[] QIS = {"age", "sex", "race", "marital-status", "education", "native-country",
                                 "workclass", "occupation"};
    static final String SALARY = "salary-class";

    static Hierarchy hierarchy(String dir, String attr) throws Exception {
        return Hierarchy.create(new File(dir, "adult_hierarchy_" + attr + ".csv"), StandardCharsets.UTF_8, ';');
    }

    /** Adult with the QIs minus {@code sensitive}; {@code sensitive} (may be null) as the sensitive attribute. */
    static Data load(String dir, String sensitive) throws Exception {
        Data data = Data.create(new File(dir, "adult.csv"), StandardCharsets.UTF_8, ';');
        for (String qi : QIS) {
            if (!qi.equals(sensitive)) {
                data.getDefinition().setAttributeType(qi, hierarchy(dir, qi));
            }
        }
        if (sensitive != null) {
            data.getDefinition().setAttributeType(sensitive, AttributeType.SENSITIVE_ATTRIBUTE);
        }
        if (!SALARY.equals(sensitive)) {
            data.getDefinition().setAttributeType(SALARY, AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        return data;
    }

    /** Transformations ARX evaluated (nodes of its lattice marked checked). */
    static int checked(ARXResult result) {
        int n = 0;
        for (ARXNode[] level : result.getLattice().getLevels()) {
            for (ARXNode node : level) {
                n += node.isChecked() ? 1 : 0;
            }
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        String dir = args[0];
        int warmup = Integer.parseInt(args[1]);
        int repeat = Integer.parseInt(args[2]);
        for (int a = 3; a < args.length; a++) {
            String[] p = args[a].split(":");
            int k = Integer.parseInt(p[0]);
            double sup = Double.parseDouble(p[1]);
            String metric = p[2];
            int l = 0;
            double t = -1;
            String tAttr = null;
            for (int i = 3; i < p.length; i++) {
                if (p[i].startsWith("l")) {
                    l = Integer.parseInt(p[i].substring(1));
                } else if (p[i].startsWith("t")) {
                    String[] ta = p[i].substring(1).split("@");
                    t = Double.parseDouble(ta[0]);
                    tAttr = ta[1];
                } else {
                    throw new IllegalArgumentException("unknown option " + p[i] + " in " + args[a]);
                }
            }
            String sensitive = tAttr != null ? tAttr : (l > 0 ? SALARY : null);
            if (l > 0 && !SALARY.equals(sensitive)) {
                throw new IllegalArgumentException("l-diversity and t-closeness on different attributes: " + args[a]);
            }
            List<Double> times = new ArrayList<>();
            ARXResult result = null;
            for (int r = 0; r < warmup + repeat; r++) {
                Data data = load(dir, sensitive);  // a Data object is anonymized once
                data.getHandle();  // reads the CSV rows (Data.create only opens an iterator): the loaded table
                ARXConfiguration config = ARXConfiguration.create();
                config.addPrivacyModel(new KAnonymity(k));
                if (l > 0) {
                    config.addPrivacyModel(new DistinctLDiversity(SALARY, l));
                }
                if (tAttr != null) {
                    config.addPrivacyModel(new HierarchicalDistanceTCloseness(tAttr, t, hierarchy(dir, tAttr)));
                }
                config.setSuppressionLimit(sup);
                config.setQualityModel(metric.equals("dm") ? Metric.createDiscernabilityMetric()
                                       : metric.startsWith("loss@") ? Metric.createLossMetric(Double.parseDouble(metric.substring(5)))
                                       : Metric.createLossMetric());
                long t0 = System.nanoTime();
                result = new ARXAnonymizer().anonymize(data, config);
                double sec = (System.nanoTime() - t0) / 1e9;
                if (r >= warmup) {
                    times.add(sec);
                }
            }
            if (result.getGlobalOptimum() == null) {
                System.out.println("{\"spec\": \"" + args[a] + "\", \"seconds\": " + times + ", \"levels\": null}");
                continue;
            }
            int[] levels = result.getGlobalOptimum().getTransformation();
            String[] names = result.getGlobalOptimum().getQuasiIdentifyingAttributes();
            StringBuilder lv = new StringBuilder("{");
            for (int i = 0; i < names.length; i++) {
                lv.append(i > 0 ? ", " : "").append('"').append(names[i]).append("\": ").append(levels[i]);
            }
            lv.append('}');
            System.out.println("{\"spec\": \"" + args[a] + "\", \"k\": " + k + ", \"suppression\": " + sup
                               + ", \"metric\": \"" + metric + "\", \"l\": " + l + ", \"t\": " + t
                               + ", \"t_attribute\": " + (tAttr == null ? "null" : "\"" + tAttr + "\"")
                               + ", \"seconds\": " + times + ", \"levels\": " + lv
                               + ", \"checked\": " + checked(result)
                               + ", \"score\": \"" + result.getGlobalOptimum().getHighestScore() + "\"}");
        }
    }
}
