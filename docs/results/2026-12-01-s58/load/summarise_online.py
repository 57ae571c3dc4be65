"""run_online.sh's A/B under load: per run the steady geomean host/loom with trials (online1)
and without (online0, LOOM_ONLINE=0); per case the median over runs, and which cases are below
0.95x in them. Usage: summarise_online.py DIR"""
import collections, glob, gzip, json, math, statistics, sys

d = sys.argv[1]


def gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


for mpi in 'om':
    per_case = collections.defaultdict(lambda: collections.defaultdict(list))
    per_run = collections.defaultdict(list)
    for f in sorted(glob.glob(f'{d}/online-{mpi}-online*-*.json*')):
        mode = f.split('/')[-1].split('-')[2]
        cases = json.load(gzip.open(f) if f.endswith('.gz') else open(f))['cases']
        per_run[mode].append(gm([c['ratio'] for c in cases]))
        for c in cases:
            per_case[(c['type'], c['packed_bytes'])][mode].append(c['ratio'])
    for mode in ('online1', 'online0'):
        if not per_run[mode]:
            continue
        medians = {k: statistics.median(v[mode]) for k, v in per_case.items()}
        below = sorted(f"{k[0]} {k[1]} B {m:.2f}" for k, m in medians.items() if m < 0.95)
        print(f"{mpi} {mode}: runs " + ' '.join(f"{g:.2f}" for g in per_run[mode]) +
              f"; median of runs {statistics.median(per_run[mode]):.3f}; per-case medians: geomean "
              f"{gm(list(medians.values())):.3f}, below 0.95x: {', '.join(below) or 'none'}")

# Each path's own time, trials off against on (geomean over cases of the per-case medians of
# the cases' life times): separates Loom's time from the host's, which runs in the same jobs.
for mpi in 'om':
    life = collections.defaultdict(lambda: collections.defaultdict(list))
    for f in glob.glob(f'{d}/online-{mpi}-online*-*.json*'):
        mode = f.split('/')[-1].split('-')[2]
        for c in json.load(gzip.open(f) if f.endswith('.gz') else open(f))['cases']:
            for path in ('host', 'loom'):
                life[(path, c['type'], c['packed_bytes'])][mode].append(c[f'{path}_life_seconds'])
    if life:
        print(f"{mpi}: own time off/on, geomean over cases: " + ', '.join(
            f"{path} {gm([statistics.median(v['online0']) / statistics.median(v['online1']) for k, v in life.items() if k[0] == path]):.3f}"
            for path in ('loom', 'host')))
