// linkd Radar tracker, see docs/radar-tracker.md
(function(w,d){
var s=d.currentScript,l=location,h=history,
  R=w.radar,q=R&&R.q||[],mem={},last,a,i;
if(!s||R&&R.v)return; // no tag, or loaded twice
function get(k){try{return localStorage.getItem(k)}catch(e){return mem[k]}}
function set(k,v){try{localStorage.setItem(k,v)}catch(e){mem[k]=v}}
function attr(k){return s.getAttribute("data-"+k)}

var off=l.protocol=="file:"||get("radar_ignore")=="true",key=attr("key")||"",
  api=attr("api")||new URL(s.src).origin+"/api/v1/radar/collect",
  vid=get("radar_vid"),tid=new URLSearchParams(l.search).get("svc_tid");
if(!vid){
  for(vid="",a=crypto.getRandomValues(new Uint8Array(16)),i=0;i<16;i++)vid+=(a[i]|256).toString(16).slice(1);
  set("radar_vid",vid);
}
if(tid)set("radar_tid",tid);else tid=get("radar_tid");

// text/plain: no CORS preflight
function send(type,o){
  if(off)return;
  o.type=type;o.url=l.href;o.visitorId=vid;o.key=key;
  if(tid)o.trackingId=tid;
  var b=JSON.stringify(o),t="text/plain";
  try{if(navigator.sendBeacon(api,new Blob([b],{type:t})))return}catch(e){}
  fetch(api,{method:"POST",body:b,headers:{"Content-Type":t},keepalive:true});
}
function pv(){
  if(l.href!=last)send("pageview",{referrer:last?"":d.referrer});
  last=l.href;
}
function wrap(f){
  var o=h[f];
  h[f]=function(){var r=o.apply(this,arguments);pv();return r};
}
wrap("pushState");wrap("replaceState");
w.addEventListener("popstate",pv);

// radar('track', ...) and radar.track(...) alike
function radar(m){
  var f=radar[m];
  if(typeof f=="function")f.apply(radar,[].slice.call(arguments,1));
}
radar.v=1;
radar.track=function(name,props){
  var o={name:""+name,props:{}},k,v,any;
  for(k in props){
    v=props[k];
    if(/^(string|number|boolean)$/.test(typeof v))o.props[k]=v,any=1;
  }
  if(!any)delete o.props;
  if(name)send("event",o);
};
radar.identify=function(p){
  p=p||{};
  send("identify",{name:p.name,email:p.email});
};

// opt-in: data-outbound, data-downloads
var ob=s.hasAttribute("data-outbound"),dl=s.hasAttribute("data-downloads");
function click(e){
  var a=e.target,u;
  if(e.type!="click"&&e.button!=1)return; // auxclick: middle button only
  while(a&&a.tagName!="A")a=a.parentNode;
  if(!a||!/^http/.test(u=a.href))return;
  if(dl&&/\.(pdf|docx?|xlsx?|pptx?|csv|txt|zip|rar|7z|t?gz|dmg|pkg|exe|msi|deb|rpm|apk|iso|mp[34]|wav|mov|avi)$/i.test(a.pathname))radar.track("File Download",{url:u});
  else if(ob&&a.host!=l.host)radar.track("Outbound Link: Click",{url:u});
}
if(ob||dl){d.addEventListener("click",click);d.addEventListener("auxclick",click)}

pv();
for(i=0;i<q.length;i++)try{radar.apply(w,q[i])}catch(e){}
w.radar=radar;
})(window,document);
