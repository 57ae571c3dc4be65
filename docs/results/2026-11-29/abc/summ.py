import re,sys,glob,math
for f in sorted(glob.glob('/tmp/abc/*-*.txt')):
    rows=[]
    for line in open(f):
        t=line.split()
        if len(t)>8 and t[0][:3] in ('vec','sub','ind'):
            for x in t:
                if re.fullmatch(r'[0-9.]+x',x):
                    rows.append((float(x[:-1]),t[0],' '.join(t[2:4]),t[5])); break
    if not rows: continue
    low=[r for r in rows if r[0]<0.95]
    g=math.exp(sum(math.log(r[0]) for r in rows)/len(rows))
    stats=[l for l in open(f) if 'p2p:' in l]
    conf=' '.join(re.findall(r'(confirm switched=\d+|switched=\d+)',stats[0])[:3]) if stats else ''
    print(f.split('/')[-1], 'n=%d geomean %.3f min %.2f below0.95: %d'%(len(rows),g,min(rows)[0],len(low)), '|', '; '.join('%s %s %s %.2f'%(r[1],r[2],r[3],r[0]) for r in sorted(low)[:6]))
