import struct, os
HDR=4096
def parse(path):
    b=open(path,'rb').read()
    h={}
    h['magic']=b[0:8]
    h['version'],h['header_size'],h['entry_size'],h['policy']=struct.unpack_from('<IIII',b,8)
    h['capacity'],h['strings_offset'],h['strings_size'],h['entries_offset']=struct.unpack_from('<QQQQ',b,24)
    h['pid'],h['ppid'],h['level'],h['clock'],h['flags'],h['backend']=struct.unpack_from('<IIIIII',b,56)
    h['head'],h['dropped'],h['strings_used']=struct.unpack_from('<QQQ',b,80)
    h['strings_dropped']=struct.unpack_from('<I',b,108)[0]
    h['anchor0']=struct.unpack_from('<QQQ',b,112)
    h['anchor1_seq']=struct.unpack_from('<Q',b,136)[0]
    h['anchor1']=struct.unpack_from('<QQQ',b,144)
    h['tps']=struct.unpack_from('<Q',b,168)[0]
    el=struct.unpack_from('<I',b,176)[0]; h['exe']=b[180:180+min(el,1024)]
    hl=struct.unpack_from('<I',b,1204)[0]; h['host']=b[1208:1208+min(hl,64)]
    nl=struct.unpack_from('<I',b,1272)[0]; h['notice']=b[1276:1276+nl] if nl<=256 else None
    h['sample_every']=struct.unpack_from('<I',b,1532)[0]
    h['counters']=list(struct.unpack_from('<32Q',b,1536))
    strs=[]; p=0; so=h['strings_offset']
    while p < h['strings_used']:
        size,kind,key,ln,aux=struct.unpack_from('<IIQII',b,so+p)
        if size==0: break
        strs.append((kind,key,aux,b[so+p+24:so+p+24+ln])); p+=size
    ents=[]
    eo=h['entries_offset']
    for i in range(h['capacity']):
        e=struct.unpack_from('<QQQIHBBiHHQQQ',b,eo+64*i)
        if e[0]!=0: ents.append(e)
    return h,strs,ents

def strrec(kind,key,aux,payload):
    size=(24+len(payload)+7)//8*8
    return struct.pack('<IIQII',size,kind,key,len(payload),aux)+payload+b'\0'*(size-24-len(payload))

def entry(seq,tb,te,tid,api,kind,flags,result,depth,node,a0,a1,a2,state=3):
    M=2**64-1
    return struct.pack("<QQQIHBBiHHQQQ",((seq+1)<<2)|state,tb&M,te&M,tid,api,kind,flags,result,depth,node,a0,a1,a2)

def build(path,strs,ents,capacity=None,strings_size=None,pid=1234,ppid=1,level=3,clock=1,flags=2,backend=1,policy=1,
          head=None,exe=b'/bin/prog',host=b'host',notice=b'',tps=10**9,anchor0=(0,0,0),anchor1=(0,0,0),anchor1_seq=0,
          strings_used=None,dropped=0,counters=None,raw_entries=None,extra=None,version=2,magic=b'CAUSEWAY',sample_every=0,
          exe_len=None,host_len=None,notice_len=None,strings_blob=None,header_size=4096,entry_size=64,entries_offset=None,strings_offset=4096,truncate=None,sparse=False):
    sblob=strings_blob if strings_blob is not None else b''.join(strrec(*s) for s in strs)
    if strings_size is None: strings_size=max(8,(len(sblob)+7)//8*8)
    if strings_used is None: strings_used=len(sblob)
    n=len(ents) if raw_entries is None else len(raw_entries)
    if capacity is None:
        capacity=1
        while capacity<max(n,1): capacity*=2
    if head is None: head=n
    if entries_offset is None: entries_offset=strings_offset+strings_size
    hdr=bytearray(HDR)
    hdr[0:8]=magic
    struct.pack_into('<IIII',hdr,8,version,header_size,entry_size,policy)
    struct.pack_into('<QQQQ',hdr,24,capacity,strings_offset,strings_size,entries_offset)
    struct.pack_into('<IIIIII',hdr,56,pid,ppid,level,clock,flags,backend)
    struct.pack_into('<QQQ',hdr,80,head,dropped,strings_used)
    struct.pack_into('<QQQ',hdr,112,*anchor0)
    struct.pack_into('<Q',hdr,136,anchor1_seq)
    struct.pack_into('<QQQ',hdr,144,*anchor1)
    struct.pack_into('<Q',hdr,168,tps)
    struct.pack_into('<I',hdr,176,len(exe) if exe_len is None else exe_len); hdr[180:180+len(exe)]=exe[:1024]
    struct.pack_into('<I',hdr,1204,len(host) if host_len is None else host_len); hdr[1208:1208+len(host)]=host[:64]
    struct.pack_into('<I',hdr,1272,len(notice) if notice_len is None else notice_len); hdr[1276:1276+len(notice)]=notice[:256]
    struct.pack_into('<I',hdr,1532,sample_every)
    if counters: struct.pack_into('<32Q',hdr,1536,*(counters+[0]*(32-len(counters))))
    with open(path,'wb') as f:
        f.write(hdr)
        f.write(sblob[:strings_size]); f.write(b'\0'*(strings_size-min(len(sblob),strings_size)))
        if sparse:
            f.truncate(HDR+strings_size+64*capacity)
            f.seek(HDR+strings_size)
        if raw_entries is not None:
            slots=dict(enumerate(raw_entries))
        else:
            slots={}
            for e in ents:
                seq=(struct.unpack_from('<Q',e,0)[0]>>2)-1
                slots[seq%capacity]=e
        if sparse:
            for i,e in slots.items():
                if e is not None:
                    f.seek(HDR+strings_size+64*i); f.write(e)
            f.seek(HDR+strings_size+64*capacity)
        else:
            buf=bytearray(64*capacity)
            for i,e in slots.items():
                if e is not None: buf[64*i:64*i+64]=e
            f.write(buf)
        if extra: f.write(extra)
    if truncate is not None:
        os.truncate(path,truncate)
