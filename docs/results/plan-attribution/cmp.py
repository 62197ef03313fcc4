import csv,sys
def load(p):
    r={}
    for row in csv.DictReader(open(p)): r[row['workload']]=(int(row['validation']),float(row['expert_relative'] or 'nan'),float(row['greedy_relative']))
    return r
runs={n:load(n+'/corpus.csv') for n in sys.argv[1:]}
keys=list(next(iter(runs.values())).keys())
import math
for n,r in runs.items():
    tr=[r[k][2] for k in keys if r[k][0]==0]; va=[r[k][2] for k in keys if r[k][0]==1]
    gap=[r[k][2]-r[k][1] for k in keys if r[k][0]==0]
    by={f:[r[k][2]-r[k][1] for k in keys if r[k][0]==0 and k.endswith('@'+f)] for f in ['0.1','0.2','0.35']}
    print(f"{n:12s} train mean {100*sum(tr)/len(tr):.2f}  val mean {100*sum(va)/len(va):.2f}  gap to expert {100*sum(gap)/len(gap):.2f}  by fraction "+" ".join(f"{f}:{100*sum(v)/len(v):.2f}" for f,v in by.items()))
