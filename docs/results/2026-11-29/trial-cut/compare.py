import json,sys,math,glob,collections
d=sys.argv[1]
def gm(xs): return math.exp(sum(map(math.log,xs))/len(xs))
for mpi in 'mo':
  R=collections.defaultdict(lambda: collections.defaultdict(list))
  for f in sorted(glob.glob(f'{d}/app-{mpi}-*.json')):
    v=f.split('-')[-2]
    for c in json.load(open(f))['cases']:
      R[(c['variant'],c['type'],c['packed_bytes'])][v].append(c['ratio'])
  for var in ('steady','recreate'):
    ks=[k for k in R if k[0]==var]
    for v in ('old','new'):
      n=len(R[ks[0]][v])
      runs=[gm([R[k][v][i] for k in ks]) for i in range(n)]
      worst=[min((R[k][v][i],k[1],k[2]) for k in ks) for i in range(n)]
      print(mpi,var,v,' '.join(f'{x:.3f}' for x in runs),' worst',' '.join(f'{w[0]:.2f}({w[1]} {w[2]})' for w in worst))
  if len(sys.argv)>2:
    for k in sorted(R):
      if k[0]!='steady': continue
      o=R[k]['old'];n=R[k]['new']
      print(f'  {k[1]:18s}{k[2]:9d} old '+' '.join(f'{x:.2f}' for x in o)+'  new '+' '.join(f'{x:.2f}' for x in n))
