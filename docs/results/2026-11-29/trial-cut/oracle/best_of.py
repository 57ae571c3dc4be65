import json,sys,math,glob,collections,os
pre=sys.argv[1]
R=collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(f'docs/results/2026-11-29/trial-cut/oracle/{pre}-*.json'):
    m=os.path.basename(f).split('-')[1]
    for c in json.load(open(f))['cases']:
        if c['variant']!='steady': continue
        R[(c['type'],c['packed_bytes'])][m].append(c['ratio'])
def gm(xs): return math.exp(sum(map(math.log,xs))/len(xs))
med=lambda xs: sorted(xs)[len(xs)//2] if len(xs)%2 else sum(sorted(xs)[len(xs)//2-1:len(xs)//2+1])/2
rows=[];G=collections.defaultdict(list)
for k,v in R.items():
    h=med(v['host']);p=med(v['pack']);a=med(v['auto']);b=max(h,p)
    G['host'].append(h);G['pack'].append(p);G['auto'].append(a);G['best'].append(b)
    rows.append((k,h,p,a,b))
for k,h,p,a,b in sorted(rows,key=lambda r:r[3]/r[4]):
    print(f'{k[0]:18s}{k[1]:9d} host {h:5.2f} pack {p:5.2f} auto {a:5.2f} best {b:5.2f}  auto/best {a/b:4.2f}')
for m in G: print(m, round(gm(G[m]),3), len(G[m]))
