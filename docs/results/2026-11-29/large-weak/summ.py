import sys,re,glob
def parse(f):
    rows={}
    for line in open(f):
        p=line.split()
        if len(p)>10 and p[0] in("steady","recreate") and p[-1] in('ok','FAIL') :
            # find ratio token: first token ending with x after loom column
            xs=[t for t in p if re.match(r'^[0-9.]+x$',t)]
            size=' '.join(p[2:4])
            rows[(p[0],p[1],size)]=(float(xs[0][:-1]), float(xs[1][:-1]))
    g={}
    for line in open(f):
        m=re.search(r'geomean host/loom, (steady|recreate)\s+([0-9.]+)x',line)
        if m: g[m.group(1)]=float(m.group(2))
    return rows,g
files=sys.argv[1:]
data={f:parse(f) for f in files}
print('geomeans:', {f:data[f][1] for f in files})
keys=list(data[files[0]][0].keys())
print('%-40s'%'case'+''.join('%14s'%f.split('/')[-1][:-4] for f in files))
for k in keys:
    vals=[data[f][0].get(k,(0,0)) for f in files]
    if min(v[0] for v in vals)<0.95 or any(abs(v[0]-vals[0][0])>0.1 for v in vals):
        print('%-40s'%' '.join(k)+''.join('%8.2f/%5.2f'%v for v in vals))
