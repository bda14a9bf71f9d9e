# a graph exec of N kernel nodes whose graph-edge entries form a cycle (0->1->...->N-1->0), launched L times,
# each launch with device intervals for every node
import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__))); from gen import *
out=sys.argv[1]; N=int(sys.argv[2]); L=int(sys.argv[3]); selfloop = len(sys.argv)>4
strs=list(API_RECS)+[(1,51,8|(1<<8)|(2<<16),b'cudaGraphLaunch'),(1,57,9|(1<<8)|(2<<16),b'cudaGraphInstantiate'),
      (2,0xabc,0,b'gk'),(3,1,0,b'step'),(3,2,0,b'gk')]
E=Entries(); add=E.add; t=10**9
add(t,t,0,8)
t+=10; add(t,t+5,57,1,a0=0,a1=0xE0E0,a2=0)
for i in range(N): add(t+6,t+6,57,10,a0=0xE0E0,a1=0xabc,a2=i|(N<<32),result=i)
for i in range(N): add(t+6,t+6,57,20,a0=0xE0E0,a1=i,a2=(i if selfloop else (i+1)%N))
for l in range(L):
    t+=1000; add(t,t,1008,2,a0=1); g=add(t+1,t+50,51,1,a0=0x10,a1=0xE0E0)
    for i in range(N): add(t+100+10*i,t+105+10*i,1,12,a0=g,a1=2,a2=7,flags=2,node=i+1)
    add(t+900,t+900,1010,3)
build(out,strs,E.ents,clock=1)
