"""Which rounds held a stall: for each case whose host's best round is under 10 us a message, the
rounds of each path more than 2 us a message slower than that path's best round, counted by
round (1-5) and path, loaded (load1) and not (load0). Usage: stalls.py DIR"""
import collections, glob, gzip, json, sys

d = sys.argv[1]
for mpi in 'om':
    for load in ('load0', 'load1'):
        stalls, cases = collections.Counter(), 0
        for f in glob.glob(f'{d}/app-{mpi}-{load}-*.json*'):
            for c in json.load(gzip.open(f) if f.endswith('.gz') else open(f))['cases']:
                if min(c['host_rounds_seconds']) > 10e-6:
                    continue
                cases += 1
                for path in ('host', 'loom'):
                    rounds = c[f'{path}_rounds_seconds']
                    for i, t in enumerate(rounds):
                        stalls[(path, i)] += t - min(rounds) > 2e-6
        print(f"{mpi} {load}: {cases} cases; rounds 1-5 with a stall: " +
              '; '.join(f"{p} " + ' '.join(str(stalls[(p, i)]) for i in range(5)) for p in ('host', 'loom')))
