// ppdm oracle harness: ARX's δ-presence (DPresence) and k-map (KMap with a research subset) on a population
// table and a research subset of it, for tests/test_arx_population_models.py. Our own code (Apache-2.0, ppdm);
// it calls ARX's public API only and needs an ARX build on the classpath (ARX is not part of ppdm — see
// benchmarks/README.md). Compiled and run by benchmarks/arx/record_population_models.py, which writes the
// fixture tests/data/arx_population_models.json from the JSON lines printed here.
//
// usage: java ArxPopulationModels POPULATION_CSV HIERARCHY_DIR QI1,QI2,... MULTIPLIER THRESHOLD SPEC ...
//
//   POPULATION_CSV  ';'-separated with a header (the whole population: ARX's input Data)
//   HIERARCHY_DIR   holds adult_hierarchy_<QI>.csv (ARX's format: one row per leaf, '*' last)
//   research subset row i (0-based data row of POPULATION_CSV) is in the subset iff
//                   (i * MULTIPLIER) mod 2^32 < THRESHOLD   (a multiplicative-hash / Weyl-sequence rule)
//   SPEC            delta:DMIN:DMAX:SUP[:kK]   DPresence(DMIN, DMAX, subset)  [+ KAnonymity(K)]
//                   kmap:K:SUP[:kK2]           KMap(K, subset)                [+ KAnonymity(K2)]
//                   SUP is ARX's suppression limit (a fraction of the research subset's rows)
//
// Every configuration: ARX's optimal search (Flash, ARXAnonymizer's default) under the discernibility metric
// (Metric.createDiscernabilityMetric(), the non-monotone DM of ARX's MetricSDNMDiscernability). One JSON line
// per SPEC (a first line describes the subset):
//   levels        ARX's global optimum: generalization level per QI
//   score         ARX's information loss of the optimum (DM)
//   lattice       one character per node of the lattice, nodes in lexicographic order of the level vectors in
//                 the QI order given: A / N anonymous / not anonymous and checked by ARX; a / n the same
//                 inferred by ARX without a check (its monotonicity); p / q probably (not) anonymous; ? unknown
//   classes       ARX's StatisticsEquivalenceClasses of the optimum's research subset view (ARX's numbers)
//   measured      per released class of the optimum (rows not suppressed in ARX's research view): min / max of
//                 rows / population rows and min population rows, with the population generalized by the
//                 hierarchies' own arrays at the optimum's levels (computed here from ARX's output, not by ARX)

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.DataSubset;
import org.deidentifier.arx.aggregates.StatisticsEquivalenceClasses;
import org.deidentifier.arx.criteria.DPresence;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.KMap;
import org.deidentifier.arx.metric.Metric;

public class ArxPopulationModels {

    /** The research subset: data rows i with (i * multiplier) mod 2^32 < threshold. */
    static Set<Integer> subset(int rows, long multiplier, long threshold) {
        Set<Integer> out = new HashSet<>();
        for (int i = 0; i < rows; i++) {
            if ((((long) i * multiplier) & 0xFFFFFFFFL) < threshold) {
                out.add(i);
            }
        }
        return out;
    }

    static Hierarchy hierarchy(String dir, String attr) throws Exception {
        return Hierarchy.create(new File(dir, "adult_hierarchy_" + attr + ".csv"), StandardCharsets.UTF_8, ';');
    }

    /** The population with the QIs' hierarchies; every other column insensitive. */
    static Data load(String csv, String dir, String[] qis) throws Exception {
        Data data = Data.create(new File(csv), StandardCharsets.UTF_8, ';');
        DataHandle h = data.getHandle();
        Set<String> q = new HashSet<>(List.of(qis));
        for (int c = 0; c < h.getNumColumns(); c++) {
            String name = h.getAttributeName(c);
            if (!q.contains(name)) {
                data.getDefinition().setAttributeType(name, AttributeType.INSENSITIVE_ATTRIBUTE);
            }
        }
        for (String qi : qis) {
            data.getDefinition().setAttributeType(qi, hierarchy(dir, qi));
        }
        return data;
    }

    /** leaf value -> label at each level, from a hierarchy's array. */
    static Map<String, String[]> labels(Hierarchy h) {
        Map<String, String[]> out = new HashMap<>();
        for (String[] row : h.getHierarchy()) {
            out.put(row[0], row);
        }
        return out;
    }

    static String json(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static String num(double x) {
        return Double.isNaN(x) || Double.isInfinite(x) ? "null" : String.format(Locale.ROOT, "%.17g", x);
    }

    static char code(ARXNode node) {
        switch (node.getAnonymity()) {
            case ANONYMOUS:
                return node.isChecked() ? 'A' : 'a';
            case NOT_ANONYMOUS:
                return node.isChecked() ? 'N' : 'n';
            case PROBABLY_ANONYMOUS:
                return 'p';
            case PROBABLY_NOT_ANONYMOUS:
                return 'q';
            default:
                return '?';
        }
    }

    public static void main(String[] args) throws Exception {
        String csv = args[0];
        String dir = args[1];
        String[] qis = args[2].split(",");
        long multiplier = Long.parseLong(args[3]);
        long threshold = Long.parseLong(args[4]);

        // Heights and the hierarchies' arrays (the same files ARX reads)
        int[] heights = new int[qis.length];
        List<Map<String, String[]>> maps = new ArrayList<>();
        for (int j = 0; j < qis.length; j++) {
            Hierarchy h = hierarchy(dir, qis[j]);
            heights[j] = h.getHierarchy()[0].length - 1;
            maps.add(labels(h));
        }
        int nodes = 1;
        for (int x : heights) {
            nodes *= x + 1;
        }

        // The population's rows (original values) and the subset
        Data probe = load(csv, dir, qis);
        DataHandle input = probe.getHandle();
        int rows = input.getNumRows();
        int[] col = new int[qis.length];
        for (int j = 0; j < qis.length; j++) {
            col[j] = input.getColumnIndexOf(qis[j]);
        }
        String[][] original = new String[rows][qis.length];
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < qis.length; j++) {
                original[r][j] = input.getValue(r, col[j]);
            }
        }
        Set<Integer> members = subset(rows, multiplier, threshold);
        long sum = 0;
        for (int i : members) {
            sum += i;
        }
        System.out.println("{\"population_rows\": " + rows + ", \"subset_rows\": " + members.size()
                           + ", \"subset_index_sum\": " + sum + ", \"lattice_nodes\": " + nodes + "}");

        for (int a = 5; a < args.length; a++) {
            String spec = args[a];
            String[] p = spec.split(":");
            Data data = load(csv, dir, qis);  // a Data object is anonymized once
            DataSubset sub = DataSubset.create(data, members);
            ARXConfiguration config = ARXConfiguration.create();
            double sup;
            int k = 0;
            String model = p[0];
            double dmin = Double.NaN, dmax = Double.NaN;
            int kmap = 0;
            int rest;
            if (model.equals("delta")) {
                dmin = Double.parseDouble(p[1]);
                dmax = Double.parseDouble(p[2]);
                sup = Double.parseDouble(p[3]);
                config.addPrivacyModel(new DPresence(dmin, dmax, sub));
                rest = 4;
            } else if (model.equals("kmap")) {
                kmap = Integer.parseInt(p[1]);
                sup = Double.parseDouble(p[2]);
                config.addPrivacyModel(new KMap(kmap, sub));
                rest = 3;
            } else {
                throw new IllegalArgumentException("unknown model in " + spec);
            }
            for (int i = rest; i < p.length; i++) {
                if (p[i].startsWith("k")) {
                    k = Integer.parseInt(p[i].substring(1));
                    config.addPrivacyModel(new KAnonymity(k));
                } else {
                    throw new IllegalArgumentException("unknown option " + p[i] + " in " + spec);
                }
            }
            config.setSuppressionLimit(sup);
            config.setQualityModel(Metric.createDiscernabilityMetric());
            ARXResult result = new ARXAnonymizer().anonymize(data, config);

            // Every node's verdict, in lexicographic order of the level vectors (QI order as given)
            char[] verdict = new char[nodes];
            java.util.Arrays.fill(verdict, '.');
            int checked = 0;
            for (ARXNode[] level : result.getLattice().getLevels()) {
                for (ARXNode node : level) {
                    int[] t = node.getTransformation();
                    String[] names = node.getQuasiIdentifyingAttributes();
                    int idx = 0;
                    for (int j = 0; j < qis.length; j++) {
                        int lv = -1;
                        for (int i = 0; i < names.length; i++) {
                            if (names[i].equals(qis[j])) {
                                lv = t[i];
                            }
                        }
                        idx = idx * (heights[j] + 1) + lv;
                    }
                    verdict[idx] = code(node);
                    checked += node.isChecked() ? 1 : 0;
                }
            }

            StringBuilder out = new StringBuilder("{\"spec\": " + json(spec) + ", \"model\": " + json(model));
            if (model.equals("delta")) {
                out.append(", \"dmin\": ").append(num(dmin)).append(", \"dmax\": ").append(num(dmax));
            } else {
                out.append(", \"k_map\": ").append(kmap);
            }
            out.append(", \"k\": ").append(k == 0 ? "null" : String.valueOf(k));
            out.append(", \"suppression\": ").append(num(sup));
            out.append(", \"lattice\": ").append(json(new String(verdict)));
            out.append(", \"checked\": ").append(checked);

            ARXNode opt = result.getGlobalOptimum();
            if (opt == null) {
                out.append(", \"levels\": null}");
                System.out.println(out);
                continue;
            }
            int[] t = opt.getTransformation();
            String[] names = opt.getQuasiIdentifyingAttributes();
            int[] levels = new int[qis.length];
            StringBuilder lv = new StringBuilder("{");
            for (int j = 0; j < qis.length; j++) {
                for (int i = 0; i < names.length; i++) {
                    if (names[i].equals(qis[j])) {
                        levels[j] = t[i];
                    }
                }
                lv.append(j > 0 ? ", " : "").append(json(qis[j])).append(": ").append(levels[j]);
            }
            lv.append('}');
            out.append(", \"levels\": ").append(lv);
            out.append(", \"score\": ").append(json(String.valueOf(opt.getHighestScore())));

            // ARX's own figures of the research subset's release
            DataHandle view = result.getOutput(opt, false).getView();
            StatisticsEquivalenceClasses ec = view.getStatistics().getEquivalenceClassStatistics();
            out.append(", \"classes\": {\"number\": ").append(ec.getNumberOfEquivalenceClasses())
               .append(", \"min_size\": ").append(ec.getMinimalEquivalenceClassSize())
               .append(", \"max_size\": ").append(ec.getMaximalEquivalenceClassSize())
               .append(", \"average_size\": ").append(num(ec.getAverageEquivalenceClassSize()))
               .append(", \"suppressed_records\": ").append(ec.getNumberOfSuppressedRecords())
               .append(", \"records\": ").append(ec.getNumberOfRecords()).append('}');

            // Per released class: rows of ARX's research view vs population rows (hierarchy arrays)
            Map<String, Integer> released = new HashMap<>();
            int[] vcol = new int[qis.length];
            for (int j = 0; j < qis.length; j++) {
                vcol[j] = view.getColumnIndexOf(qis[j]);
            }
            int outliers = 0;
            for (int r = 0; r < view.getNumRows(); r++) {
                if (view.isOutlier(r)) {
                    outliers++;
                    continue;
                }
                StringBuilder key = new StringBuilder();
                for (int j = 0; j < qis.length; j++) {
                    key.append(view.getValue(r, vcol[j])).append('\u0001');
                }
                released.merge(key.toString(), 1, Integer::sum);
            }
            Map<String, Integer> population = new HashMap<>();
            Map<String, Integer> research = new HashMap<>();
            for (int r = 0; r < rows; r++) {
                StringBuilder key = new StringBuilder();
                for (int j = 0; j < qis.length; j++) {
                    key.append(maps.get(j).get(original[r][j])[levels[j]]).append('\u0001');
                }
                population.merge(key.toString(), 1, Integer::sum);
                if (members.contains(r)) {
                    research.merge(key.toString(), 1, Integer::sum);
                }
            }
            double lo = Double.POSITIVE_INFINITY, hi = 0;
            int minPop = Integer.MAX_VALUE;
            int unmatched = 0;
            for (Map.Entry<String, Integer> e : released.entrySet()) {
                Integer pc = population.get(e.getKey());
                if (pc == null) {
                    unmatched++;
                    continue;
                }
                double d = (double) e.getValue() / pc;
                lo = Math.min(lo, d);
                hi = Math.max(hi, d);
                minPop = Math.min(minPop, pc);
            }
            int populationOnly = 0;
            for (String key : population.keySet()) {
                populationOnly += research.containsKey(key) ? 0 : 1;
            }
            out.append(", \"measured\": {\"released_classes\": ").append(released.size())
               .append(", \"suppressed_rows\": ").append(outliers)
               .append(", \"delta_min\": ").append(num(lo))
               .append(", \"delta_max\": ").append(num(hi))
               .append(", \"min_population_rows\": ").append(minPop == Integer.MAX_VALUE ? "null" : minPop)
               .append(", \"classes_not_in_population\": ").append(unmatched)
               .append(", \"population_only_classes\": ").append(populationOnly).append('}');
            out.append('}');
            System.out.println(out);
        }
    }
}
