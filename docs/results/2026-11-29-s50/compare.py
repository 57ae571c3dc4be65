"""A/B summary of `loom-bench app` JSON files named app-{o,m}-{old,new}-N.json in DIR.
Per run: steady/recreate geomean and worst case; per case (with -v): the ratios of each run and
their median. Where the JSON has each round's time (host_rounds_seconds), also the ratio with
only the host's first round in full (the formula before 2026-11-29 evening), for comparison."""
import collections, glob, json, math, statistics, sys

d = sys.argv[1]
verbose = '-v' in sys.argv


def gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def old_formula(c):
    """host/loom with the host's first round in full and Loom's rounds up to r in full."""
    if 'host_rounds_seconds' not in c:
        return c['ratio']
    r = c['loom_rounds_in_full']
    life = []
    for v, full in ((c['host_rounds_seconds'], 1), (c['loom_rounds_seconds'], r)):
        rest = v[full:]
        life.append((sum(v[:full]) + (statistics.median(rest) * len(rest) if rest else 0)) / len(v))
    return life[0] / life[1]


for mpi in 'om':
    R = collections.defaultdict(lambda: collections.defaultdict(list))
    for f in sorted(glob.glob(f'{d}/app-{mpi}-*.json')):
        v = f.split('-')[-2]
        for c in json.load(open(f))['cases']:
            k = (c['variant'], c['type'], c['packed_bytes'])
            R[k][v].append(c['ratio'])
            R[k][v + '-oldformula'].append(old_formula(c))
    if not R:
        continue
    for var in ('steady', 'recreate'):
        ks = [k for k in R if k[0] == var]
        for v in ('old', 'new', 'old-oldformula', 'new-oldformula'):
            n = len(R[ks[0]][v])
            if n == 0:
                continue
            runs = [gm([R[k][v][i] for k in ks]) for i in range(n)]
            worst = [min((R[k][v][i], k[1], k[2]) for k in ks) for i in range(n)]
            med = {k: statistics.median(R[k][v]) for k in ks}
            below = sorted((m, k[1], k[2]) for k, m in med.items() if m < 0.95)
            print(f'{mpi} {var:8s} {v:15s}', ' '.join(f'{x:.3f}' for x in runs),
                  f' per-case median geomean {gm(list(med.values())):.3f}',
                  ' worst', ' '.join(f'{w[0]:.2f}({w[1]} {w[2]})' for w in worst),
                  ' medians<0.95:', ' '.join(f'{m:.3f}({t} {b})' for m, t, b in below) or 'none')
    if verbose:
        for k in sorted(R):
            if k[0] != 'steady':
                continue
            o, n = R[k]['old'], R[k]['new']
            print(f'  {k[1]:18s}{k[2]:9d} old ' + ' '.join(f'{x:.2f}' for x in o) +
                  f' (med {statistics.median(o):.3f})  new ' + ' '.join(f'{x:.2f}' for x in n) +
                  (f' (med {statistics.median(n):.3f})' if n else ''))
