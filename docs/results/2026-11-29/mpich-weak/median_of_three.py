import sys,re,statistics
def parse(f):
    rows={}
    for line in open(f):
        p=re.sub(r' r\d ',' ',line).split()
        if len(p)>10 and p[0] in('steady','recreate') and p[-1] in('ok','MISMATCH'):
            xs=[t for t in p if re.match(r'^[0-9.]+x$',t)]
            rows[(p[0],p[1],' '.join(p[2:4]))]=float(xs[0][:-1])
    return rows
for label,files in [(a.split('=')[0],a.split('=')[1].split(',')) for a in sys.argv[1:]]:
    data=[parse(f) for f in files]
    keys=data[0].keys()
    for var in ('steady','recreate'):
        meds={k:statistics.median(d[k] for d in data) for k in keys if k[0]==var}
        gm=statistics.geometric_mean(meds.values())
        low=sorted((v,k[1]+' '+k[2]) for k,v in meds.items() if v<0.95)
        print(label,var,'geomean of medians %.3f'%gm,'below 0.95:',len(low),low)
