# N device intervals on one stream that all overlap without nesting (interval i = [i, i+10^9)),
# plus N NVTX start/end ranges that overlap likewise on one thread
import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__))); from gen import *
out=sys.argv[1]; N=int(sys.argv[2]); MODE=sys.argv[3] if len(sys.argv)>3 else "dev,rng"
strs=list(API_RECS)+[(1,1003,0|(3<<8)|(1<<16),b'nvtxRangeStartEx'),(1,1006,0|(3<<8)|(1<<16),b'nvtxRangeEnd'),
      (2,0xabc,0,b'k'),(3,1,0,b'r'),(3,2,0,b'k')]
E=Entries(); add=E.add; t=10**9
add(t,t,0,8)
for i in range(N):
    l=add(t+10*i,t+10*i+5,1,1,a0=0x10,a1=0xabc,a2=1)
    add(t+10*i+6,t+10*i+(10**9 if "dev" in MODE else 8),1,12,a0=l,a1=2,a2=7,flags=2)
for i in range(N): add(t+10*i+1,t+10*i+1,1003,4,a0=1,a2=i+1)
for i in range(N): add(t+(10**9 if "rng" in MODE else 5)+10*i,t+(10**9 if "rng" in MODE else 5)+10*i,1006,5,a2=i+1)
build(out,strs,E.ents,clock=1)
