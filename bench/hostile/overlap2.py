# N device intervals on one stream that all overlap without nesting (interval i = [i, i+10^9)),
# plus N NVTX start/end ranges that overlap likewise on one thread
import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__))); from gen import *
out=sys.argv[1]; N=int(sys.argv[2]); MODE=sys.argv[3] if len(sys.argv)>3 else "dev,rng"
strs=list(API_RECS)+[(1,1003,0|(3<<8)|(1<<16),b'nvtxRangeStartEx'),(1,1006,0|(3<<8)|(1<<16),b'nvtxRangeEnd'),
      (2,0xabc,0,b'k'),(3,1,0,b'r'),(3,2,0,b'k')]
ents=[]; seq=0; t=10**9
def add(tb,te,api,kind,a0=0,a1=0,a2=0,flags=0,depth=0,result=0,node=0):
    global seq; ents.append(entry(seq,tb,te,100,api,kind,flags,result,depth,node,a0,a1,a2)); seq+=1; return seq-1
add(t,t,0,8)
for i in range(N):
    l=add(t+10*i,t+10*i+5,1,1,a0=0x10,a1=0xabc,a2=1)
    add(t+10*i+6,t+10*i+(10**9 if "dev" in MODE else 8),1,12,a0=l,a1=2,a2=7,flags=2)
for i in range(N): add(t+10*i+1,t+10*i+1,1003,4,a0=1,a2=i+1)
for i in range(N): add(t+(10**9 if "rng" in MODE else 5)+10*i,t+(10**9 if "rng" in MODE else 5)+10*i,1006,5,a2=i+1)
build(out,strs,ents,clock=1)
