"""Per run and per case (median over runs): loom-bench app host/loom with (load1) and without
(load0) a busy loop beside the ranks. Usage: summarise.py DIR"""
import glob, gzip, json, math, statistics, sys, collections
d = sys.argv[1]
def gm(xs): return math.exp(sum(map(math.log, xs)) / len(xs))
for mpi in 'om':
    R = collections.defaultdict(lambda: collections.defaultdict(list))
    runs = collections.defaultdict(list)
    for f in sorted(glob.glob(f'{d}/app-{mpi}-load*-*.json*')):
        load = f.split('/')[-1].split('-')[2]
        data = json.load(gzip.open(f) if f.endswith('.gz') else open(f))['cases']
        for var in ('steady', 'recreate'):
            cs = [c for c in data if c['variant'] == var]
            rs = [c['ratio'] for c in cs]
            worst = min(cs, key=lambda c: c['ratio'])
            runs[(var, load)].append(f"{gm(rs):.3f} (worst {worst['ratio']:.2f} {worst['type']} {worst['packed_bytes']} B; {sum(r < 0.95 for r in rs)} below 0.95)")
            for c in cs:
                R[(var, c['type'], c['packed_bytes'])][load].append(c['ratio'])
    for k, v in sorted(runs.items()):
        print(mpi, k, ' | '.join(v))
    for var in ('steady', 'recreate'):
        for load in ('load0', 'load1'):
            ks = [k for k in R if k[0] == var and R[k][load]]
            if not ks: continue
            med = [statistics.median(R[k][load]) for k in ks]
            below = [(k[1], k[2], round(m, 2)) for k, m in zip(ks, med) if m < 0.95]
            print(f"{mpi} {var} {load}: per-case median over {len(R[ks[0]][load])} runs: geomean {gm(med):.3f}; below 0.95: {below}")
