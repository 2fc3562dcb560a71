package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The files this test reads, relative to deploy/ (go test runs in the
// package's directory).
const (
	composeMany = "compose-many.yml"
	composeOne  = "docker-compose.yml"
	haproxyCfg  = "haproxy.cfg"
	k8sDir      = "kubernetes"
	configGo    = "../cmd/linkd/app/config.go"
	dockerfile  = "deploy/Dockerfile" // as the compose files name it
	instances   = 3
)

// The servers every linkd of compose-many.yml must wait for, healthy.
var servers = []string{"postgres", "kafka", "clickhouse"}

// shared are the settings that make several linkd processes one
// deployment (DECISIONS.md, "Many instances: one deployment"): every
// instance must have them, and the same.
var shared = []string{"LINKD_EVENTSTORE", "LINKD_KAFKA_BROKERS", "LINKD_CLICKHOUSE_DSN", "LINKD_SECRET", "LINKD_DEFAULT_DOMAIN"}

// goRuntime are variables besides LINKD_* that a manifest may set.
var goRuntime = map[string]bool{"GOGC": true, "GOMEMLIMIT": true, "GOMAXPROCS": true, "GODEBUG": true}

// ---- reading ----

// yamlFiles returns every .yml and .yaml file under deploy/.
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// decodeAll decodes every document of a YAML stream (merge keys and
// anchors resolved), skipping empty ones.
func decodeAll(b []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

func readYAML(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := decodeAll(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return docs
}

func readCompose(t *testing.T, path string) map[string]any {
	t.Helper()
	docs := readYAML(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: %d YAML documents, want 1", path, len(docs))
	}
	return docs[0]
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// settingName finds the variables config.go reads: every quoted LINKD_ name.
var settingName = regexp.MustCompile(`"(LINKD_[A-Z0-9_]+)"`)

// settings returns the LINKD_* names that cmd/linkd/app/config.go reads.
func settings(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, m := range settingName.FindAllStringSubmatch(readFile(t, configGo), -1) {
		names[m[1]] = true
	}
	// If the way config.go names its variables changes, say so here rather
	// than pass on an empty set.
	for _, n := range append([]string{"LINKD_ADDR", "LINKD_DATA_DIR"}, shared...) {
		if !names[n] {
			t.Fatalf("%s: %s not found; does it still read its variables as str(%q, ...)?", configGo, n, n)
		}
	}
	return names
}

// ---- generic access to decoded YAML ----

func get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(v any, keys ...string) string {
	switch x := get(v, keys...).(type) {
	case string:
		return x
	case int, bool, float64:
		return fmt.Sprint(x)
	}
	return ""
}

func list(v any, keys ...string) []any {
	l, _ := get(v, keys...).([]any)
	return l
}

func dict(v any, keys ...string) map[string]any {
	m, _ := get(v, keys...).(map[string]any)
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// problems collects what a check finds wrong.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// ---- compose ----

// env returns a compose service's environment, in map or list form.
func env(svc any) map[string]string {
	out := map[string]string{}
	switch e := get(svc, "environment").(type) {
	case map[string]any:
		for k, v := range e {
			out[k] = str(map[string]any{"v": v}, "v")
		}
	case []any:
		for _, item := range e {
			k, v, _ := strings.Cut(fmt.Sprint(item), "=")
			out[k] = v
		}
	}
	return out
}

type mount struct{ source, target string }

// mounts returns a compose service's volumes, in short or long form.
func mounts(svc any) []mount {
	var out []mount
	for _, v := range list(svc, "volumes") {
		switch x := v.(type) {
		case string:
			parts := strings.Split(x, ":")
			if len(parts) == 1 {
				out = append(out, mount{target: parts[0]})
			} else {
				out = append(out, mount{source: parts[0], target: parts[1]})
			}
		case map[string]any:
			out = append(out, mount{source: str(x, "source"), target: str(x, "target")})
		}
	}
	return out
}

// dependsOn returns a compose service's dependencies and their conditions.
func dependsOn(svc any) map[string]string {
	out := map[string]string{}
	switch d := get(svc, "depends_on").(type) {
	case []any:
		for _, s := range d {
			out[fmt.Sprint(s)] = "service_started"
		}
	case map[string]any:
		for s, c := range d {
			out[s] = str(c, "condition")
		}
	}
	return out
}

// linkdServices returns the services built from deploy/Dockerfile, by name.
func linkdServices(c map[string]any) map[string]any {
	out := map[string]any{}
	for name, svc := range dict(c, "services") {
		if str(svc, "build", "dockerfile") == dockerfile {
			out[name] = svc
		}
	}
	return out
}

// checkSettings reports names that are neither config.go's nor Go's.
func checkSettings(p *problems, where string, names []string, known map[string]bool) {
	for _, n := range names {
		if !known[n] && !goRuntime[n] {
			p.add("%s: %s is not a setting of linkd (cmd/linkd/app/config.go)", where, n)
		}
	}
}

// checkLinkdCompose checks what every compose file's linkd services need:
// known settings, and a data directory in a named volume of their own.
func checkLinkdCompose(c map[string]any, known map[string]bool) problems {
	var p problems
	linkd := linkdServices(c)
	if len(linkd) == 0 {
		p.add("no service is built from %s", dockerfile)
	}
	declared := dict(c, "volumes")
	users := map[string][]string{} // named volume -> services mounting it
	for _, name := range sortedKeys(dict(c, "services")) {
		for _, m := range mounts(dict(c, "services")[name]) {
			if m.source != "" && !strings.HasPrefix(m.source, ".") && !strings.HasPrefix(m.source, "/") {
				users[m.source] = append(users[m.source], name)
			}
		}
	}
	for _, name := range sortedKeys(linkd) {
		svc := linkd[name]
		e := env(svc)
		checkSettings(&p, "service "+name, sortedKeys(e), known)
		dataDir := e["LINKD_DATA_DIR"]
		if dataDir == "" {
			dataDir = "/data" // the image's
		}
		var vol string
		for _, m := range mounts(svc) {
			if m.target == dataDir {
				vol = m.source
			}
		}
		switch {
		case vol == "":
			p.add("service %s: no volume at its LINKD_DATA_DIR %s", name, dataDir)
		case !slices.Contains(sortedKeys(declared), vol):
			p.add("service %s: its data volume %q is not a named volume of the file", name, vol)
		case len(users[vol]) != 1:
			p.add("service %s: its data volume %q is mounted by %v too: every instance needs its own", name, vol, users[vol])
		}
		if n, _ := get(svc, "deploy", "replicas").(int); n > 1 && vol != "" {
			p.add("service %s: %d replicas would share the volume %q", name, n, vol)
		}
	}
	return p
}

// checkCompose checks compose-many.yml: instances linkd services on the
// shared servers, the same shared settings, behind an HAProxy whose
// configuration (cfg) balances them by /healthz.
func checkCompose(c map[string]any, cfg string, known map[string]bool) problems {
	p := checkLinkdCompose(c, known)
	services := dict(c, "services")
	linkd := linkdServices(c)
	count := 0
	for _, svc := range linkd {
		n, ok := get(svc, "deploy", "replicas").(int)
		if !ok {
			n = 1
		}
		count += n
	}
	if count != instances {
		p.add("%d linkd instances, want %d", count, instances)
	}

	// The shared settings: present, and the same everywhere.
	first := map[string]string{}
	for _, name := range sortedKeys(linkd) {
		svc := linkd[name]
		e := env(svc)
		for _, k := range shared {
			switch v, ok := e[k]; {
			case !ok || v == "":
				p.add("service %s: %s is not set", name, k)
			case first[k] == "":
				first[k] = v
			case first[k] != v:
				p.add("service %s: %s is %q, another instance's is %q", name, k, v, first[k])
			}
		}
		if es := e["LINKD_EVENTSTORE"]; es != "" && !strings.HasPrefix(es, "postgres://") && !strings.HasPrefix(es, "esdb://") {
			p.add("service %s: LINKD_EVENTSTORE %q is not a shared server", name, es)
		}
		if len(list(svc, "ports")) > 0 {
			p.add("service %s: publishes ports; clients must go through the load balancer", name)
		}
		deps := dependsOn(svc)
		for _, s := range servers {
			if deps[s] != "service_healthy" {
				p.add("service %s: does not wait for %s to be healthy", name, s)
			}
		}
	}
	for _, s := range servers {
		if services[s] == nil {
			p.add("no %s service", s)
		} else if len(list(services[s], "healthcheck", "test")) == 0 {
			p.add("service %s: no healthcheck", s)
		}
	}

	// The load balancer: HAProxy with cfg, published, starting after the
	// instances, and balancing exactly them.
	var lb string
	for _, name := range sortedKeys(services) {
		if strings.HasPrefix(str(services[name], "image"), "haproxy:") {
			lb = name
		}
	}
	if lb == "" {
		p.add("no service runs the haproxy image")
		return p
	}
	svc := services[lb]
	cfgMounted := false
	for _, m := range mounts(svc) {
		if filepath.Base(m.source) == haproxyCfg && m.target == "/usr/local/etc/haproxy/haproxy.cfg" {
			cfgMounted = true
		}
	}
	if !cfgMounted {
		p.add("service %s: does not mount ./%s at /usr/local/etc/haproxy/haproxy.cfg", lb, haproxyCfg)
	}
	if len(list(svc, "ports")) == 0 {
		p.add("service %s: publishes no port", lb)
	}
	deps := dependsOn(svc)
	for name := range linkd {
		if _, ok := deps[name]; !ok {
			p.add("service %s: does not depend on %s", lb, name)
		}
	}
	want := map[string]string{} // host -> port HAProxy must reach it on
	for name, svc := range linkd {
		_, port, _ := net.SplitHostPort(env(svc)["LINKD_ADDR"])
		want[name] = port
	}
	p = append(p, checkHAProxy(cfg, want)...)
	return p
}

// ---- HAProxy ----

// section is one section of an HAProxy configuration: its keyword, its
// name, and its lines without comments.
type section struct {
	kind, name string
	lines      [][]string
}

// parseHAProxy splits a configuration into sections. It knows the file's
// shape (a section starts at column 0, its lines are indented, # starts a
// comment), not its keywords.
func parseHAProxy(cfg string) ([]section, error) {
	var out []section
	for i, raw := range strings.Split(cfg, "\n") {
		line, _, _ := strings.Cut(raw, "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if raw[0] != ' ' && raw[0] != '\t' {
			s := section{kind: fields[0]}
			if len(fields) > 1 {
				s.name = fields[1]
			}
			out = append(out, s)
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("line %d: %q is outside any section", i+1, strings.TrimSpace(raw))
		}
		out[len(out)-1].lines = append(out[len(out)-1].lines, fields)
	}
	return out, nil
}

// find returns the section's lines whose first word is keyword.
func (s section) find(keyword string) [][]string {
	var out [][]string
	for _, l := range s.lines {
		if l[0] == keyword {
			out = append(out, l)
		}
	}
	return out
}

// checkHAProxy checks that the frontend's default backend balances exactly
// the servers of want (host -> port) round robin, each health-checked by a
// GET of /healthz.
func checkHAProxy(cfg string, want map[string]string) problems {
	var p problems
	secs, err := parseHAProxy(cfg)
	if err != nil {
		p.add("%s: %v", haproxyCfg, err)
		return p
	}
	backends := map[string]section{}
	var defaults section
	var frontends []section
	for _, s := range secs {
		switch s.kind {
		case "backend":
			backends[s.name] = s
		case "defaults":
			defaults = s
		case "frontend":
			frontends = append(frontends, s)
		}
	}
	var be section
	found := false
	for _, fe := range frontends {
		for _, l := range fe.find("default_backend") {
			if len(l) > 1 {
				be, found = backends[l[1]]
			}
		}
		if found {
			if len(fe.find("bind")) == 0 {
				p.add("%s: frontend %s binds nothing", haproxyCfg, fe.name)
			}
			if !slices.ContainsFunc(append(fe.find("option"), defaults.find("option")...), func(l []string) bool {
				return len(l) > 1 && l[1] == "forwardfor"
			}) {
				p.add("%s: frontend %s does not add X-Forwarded-For (option forwardfor): linkd would count every click from HAProxy's address", haproxyCfg, fe.name)
			}
			break
		}
	}
	if !found {
		p.add("%s: no frontend with a default_backend that the file defines", haproxyCfg)
		return p
	}
	if b := be.find("balance"); len(b) != 1 || len(b[0]) < 2 || b[0][1] != "roundrobin" {
		p.add("%s: backend %s: want balance roundrobin", haproxyCfg, be.name)
	}
	// /healthz: "option httpchk GET /healthz" or "option httpchk" with
	// "http-check send meth GET uri /healthz".
	checksHealthz := false
	for _, l := range be.find("option") {
		if len(l) >= 4 && l[1] == "httpchk" && l[2] == "GET" && l[3] == "/healthz" {
			checksHealthz = true
		}
	}
	for _, l := range be.find("http-check") {
		if len(l) > 1 && l[1] == "send" {
			i := slices.Index(l, "uri")
			if i > 0 && i+1 < len(l) && l[i+1] == "/healthz" && (!slices.Contains(l, "meth") || slices.Contains(l, "GET")) {
				checksHealthz = slices.ContainsFunc(be.find("option"), func(o []string) bool { return len(o) > 1 && o[1] == "httpchk" })
			}
		}
	}
	if !checksHealthz {
		p.add("%s: backend %s does not check GET /healthz", haproxyCfg, be.name)
	}
	checkAll := slices.ContainsFunc(be.find("default-server"), func(l []string) bool { return slices.Contains(l, "check") })
	got := map[string]bool{}
	for _, l := range be.find("server") {
		if len(l) < 3 {
			p.add("%s: backend %s: server line %v has no address", haproxyCfg, be.name, l)
			continue
		}
		host, port, err := net.SplitHostPort(l[2])
		if err != nil {
			p.add("%s: backend %s: server %s: address %q: %v", haproxyCfg, be.name, l[1], l[2], err)
			continue
		}
		got[host] = true
		switch w, ok := want[host]; {
		case !ok:
			p.add("%s: backend %s: server %s is not a linkd instance of the compose file", haproxyCfg, be.name, host)
		case port != w:
			p.add("%s: backend %s: server %s on port %s, linkd listens on %s", haproxyCfg, be.name, host, port, w)
		}
		if !checkAll && !slices.Contains(l[3:], "check") {
			p.add("%s: backend %s: server %s is not health-checked", haproxyCfg, be.name, host)
		}
	}
	for _, host := range sortedKeys(want) {
		if !got[host] {
			p.add("%s: backend %s: linkd instance %s is not a server", haproxyCfg, be.name, host)
		}
	}
	return p
}

// ---- Kubernetes ----

// manifests returns every document of deploy/kubernetes, by kind and name,
// and the files they came from.
type manifests struct {
	byKind map[string][]map[string]any
	files  map[string][]string // file -> kinds
}

func readManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", k8sDir, err)
	}
	m := manifests{byKind: map[string][]map[string]any{}, files: map[string][]string{}}
	for _, f := range files {
		for _, doc := range readYAML(t, f) {
			kind := str(doc, "kind")
			m.byKind[kind] = append(m.byKind[kind], doc)
			m.files[filepath.Base(f)] = append(m.files[filepath.Base(f)], kind)
		}
	}
	return m
}

// subset reports whether every label of sel is in labels.
func subset(sel, labels map[string]any) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkKubernetes checks the manifests of deploy/kubernetes.
func checkKubernetes(m manifests, known map[string]bool) problems {
	var p problems
	for kind, docs := range m.byKind {
		for _, d := range docs {
			if kind == "" || str(d, "apiVersion") == "" {
				p.add("a manifest has no kind or apiVersion: %v", sortedKeys(d))
			} else if kind != "Kustomization" && str(d, "metadata", "name") == "" {
				p.add("a %s has no name", kind)
			}
		}
	}
	one := func(kind string) map[string]any {
		if n := len(m.byKind[kind]); n != 1 {
			p.add("%d %s manifests, want 1", n, kind)
			return nil
		}
		return m.byKind[kind][0]
	}
	dep, pdb, svc := one("Deployment"), one("PodDisruptionBudget"), one("Service")
	secret, cm, kust := one("Secret"), one("ConfigMap"), one("Kustomization")
	if dep == nil {
		return p
	}

	// The Deployment.
	if n, _ := get(dep, "spec", "replicas").(int); n != instances {
		p.add("Deployment: replicas %v, want %d", get(dep, "spec", "replicas"), instances)
	}
	if str(dep, "spec", "strategy", "type") != "RollingUpdate" ||
		str(dep, "spec", "strategy", "rollingUpdate", "maxUnavailable") != "0" ||
		str(dep, "spec", "strategy", "rollingUpdate", "maxSurge") != "1" {
		p.add("Deployment: want a RollingUpdate with maxUnavailable 0 and maxSurge 1")
	}
	podLabels := dict(dep, "spec", "template", "metadata", "labels")
	if !subset(dict(dep, "spec", "selector", "matchLabels"), podLabels) {
		p.add("Deployment: its selector does not select its own pods")
	}
	containers := list(dep, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		p.add("Deployment: %d containers, want 1", len(containers))
		return p
	}
	c := containers[0]
	ports := map[string]string{} // name and number -> number
	for _, port := range list(c, "ports") {
		n := str(port, "containerPort")
		ports[n] = n
		if name := str(port, "name"); name != "" {
			ports[name] = n
		}
	}
	values := map[string]string{}
	fromSecret := map[string]bool{}
	var names []string
	for _, e := range list(c, "env") {
		name := str(e, "name")
		names = append(names, name)
		values[name] = str(e, "value")
		if ref := dict(e, "valueFrom", "secretKeyRef"); ref != nil {
			fromSecret[name] = true
			if secret != nil && str(ref, "name") != str(secret, "metadata", "name") {
				p.add("Deployment: %s comes from Secret %q, the example Secret is %q", name, str(ref, "name"), str(secret, "metadata", "name"))
			}
			if _, ok := dict(secret, "stringData")[str(ref, "key")]; !ok && get(ref, "optional") != true {
				p.add("Deployment: %s comes from key %q, which the example Secret lacks", name, str(ref, "key"))
			}
		}
	}
	for _, from := range list(c, "envFrom") {
		if ref := str(from, "configMapRef", "name"); ref != "" {
			if cm == nil || ref != str(cm, "metadata", "name") {
				p.add("Deployment: envFrom names ConfigMap %q, which is not in %s", ref, k8sDir)
				continue
			}
			names = append(names, sortedKeys(dict(cm, "data"))...)
		}
		if ref := str(from, "secretRef", "name"); ref != "" && secret != nil {
			for _, k := range sortedKeys(dict(secret, "stringData")) {
				names = append(names, k)
				fromSecret[k] = true
			}
		}
	}
	checkSettings(&p, "Deployment", names, known)
	for _, k := range []string{"LINKD_SECRET", "LINKD_EVENTSTORE", "LINKD_CLICKHOUSE_DSN"} {
		if !fromSecret[k] {
			p.add("Deployment: %s does not come from the Secret", k)
		}
	}
	for _, k := range shared {
		if !slices.Contains(names, k) {
			p.add("Deployment: %s is not set", k)
		}
	}
	_, port, _ := net.SplitHostPort(values["LINKD_ADDR"])
	if port == "" || ports[port] != port {
		p.add("Deployment: LINKD_ADDR %q is not on a port the container declares", values["LINKD_ADDR"])
	}

	// Probes: ready on /healthz; a liveness probe of some kind.
	if str(c, "readinessProbe", "httpGet", "path") != "/healthz" {
		p.add("Deployment: the readiness probe is not GET /healthz")
	} else if ports[str(c, "readinessProbe", "httpGet", "port")] != port {
		p.add("Deployment: the readiness probe's port %q is not linkd's (%s)", str(c, "readinessProbe", "httpGet", "port"), port)
	}
	if get(c, "livenessProbe") == nil {
		p.add("Deployment: no liveness probe")
	}
	for _, kind := range []string{"requests", "limits"} {
		for _, r := range []string{"cpu", "memory"} {
			if str(c, "resources", kind, r) == "" {
				p.add("Deployment: no resources.%s.%s", kind, r)
			}
		}
	}

	// The data directory: a volume that lives and dies with the pod.
	dataDir := values["LINKD_DATA_DIR"]
	var volName string
	for _, vm := range list(c, "volumeMounts") {
		if str(vm, "mountPath") == dataDir {
			volName = str(vm, "name")
		}
	}
	if dataDir == "" || volName == "" {
		p.add("Deployment: no volume at LINKD_DATA_DIR %q", dataDir)
	}
	for _, v := range list(dep, "spec", "template", "spec", "volumes") {
		if str(v, "name") == volName && get(v, "emptyDir") == nil && get(v, "ephemeral") == nil {
			p.add("Deployment: the data volume %s is neither emptyDir nor ephemeral", volName)
		}
	}

	// The PodDisruptionBudget and the Service select the Deployment's pods.
	if pdb != nil {
		if !subset(dict(pdb, "spec", "selector", "matchLabels"), podLabels) {
			p.add("PodDisruptionBudget: its selector does not select the Deployment's pods")
		}
		minA, hasMin := get(pdb, "spec", "minAvailable").(int)
		maxU, hasMax := get(pdb, "spec", "maxUnavailable").(int)
		if !(hasMin && minA >= 1 && minA < instances) && !(hasMax && maxU >= 1 && maxU < instances) {
			p.add("PodDisruptionBudget: want minAvailable or maxUnavailable between 1 and %d", instances-1)
		}
	}
	if svc != nil {
		if !subset(dict(svc, "spec", "selector"), podLabels) {
			p.add("Service: its selector does not select the Deployment's pods")
		}
		for _, sp := range list(svc, "spec", "ports") {
			if ports[str(sp, "targetPort")] != port {
				p.add("Service: targetPort %q is not linkd's port %s", str(sp, "targetPort"), port)
			}
		}
	}

	// The Kustomization lists every manifest but the example Secret.
	if kust != nil {
		var res []string
		for _, r := range list(kust, "resources") {
			res = append(res, fmt.Sprint(r))
		}
		for _, f := range sortedKeys(m.files) {
			kinds := m.files[f]
			switch listed := slices.Contains(res, f); {
			case slices.Contains(kinds, "Kustomization"):
			case slices.Contains(kinds, "Secret") && listed:
				p.add("kustomization.yaml applies %s, a placeholder Secret", f)
			case !slices.Contains(kinds, "Secret") && !listed:
				p.add("kustomization.yaml does not list %s", f)
			}
		}
		for _, r := range res {
			if _, ok := m.files[r]; !ok {
				p.add("kustomization.yaml lists %s, which is not in %s", r, k8sDir)
			}
		}
	}
	return p
}

// ---- tests ----

func report(t *testing.T, p problems) {
	t.Helper()
	for _, s := range p {
		t.Error(s)
	}
}

func TestYAMLParses(t *testing.T) {
	t.Parallel()
	files := yamlFiles(t)
	for _, want := range []string{composeMany, composeOne, filepath.Join(k8sDir, "deployment.yaml")} {
		if !slices.Contains(files, want) {
			t.Errorf("%s is missing", want)
		}
	}
	for _, f := range files {
		if docs := readYAML(t, f); len(docs) == 0 {
			t.Errorf("%s: no YAML document", f)
		}
	}
}

func TestComposeMany(t *testing.T) {
	t.Parallel()
	report(t, checkCompose(readCompose(t, composeMany), readFile(t, haproxyCfg), settings(t)))
}

func TestComposeOne(t *testing.T) {
	t.Parallel()
	c := readCompose(t, composeOne)
	report(t, checkLinkdCompose(c, settings(t)))
	if n := len(linkdServices(c)); n != 1 {
		t.Errorf("%s: %d linkd services, want 1", composeOne, n)
	}
}

func TestKubernetes(t *testing.T) {
	t.Parallel()
	report(t, checkKubernetes(readManifests(t), settings(t)))
}

// HAProxy's own check of the configuration, where HAProxy is installed
// (apt-get install haproxy). Names it cannot resolve here are warnings.
func TestHAProxyCheck(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/haproxy"); serr != nil {
			t.Skip("haproxy is not installed")
		}
		bin = "/usr/sbin/haproxy" // Debian's, when /usr/sbin is not on PATH
	}
	out, err := exec.Command(bin, "-c", "-f", haproxyCfg).CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy -c -f %s: %v\n%s", haproxyCfg, err, out)
	}
}

// kubectl's kustomize builds the manifests, where kubectl is installed
// (it needs no cluster).
func TestKustomizeBuild(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	out, err := exec.Command(bin, "kustomize", k8sDir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			out = ee.Stderr
		}
		t.Fatalf("kubectl kustomize %s: %v\n%s", k8sDir, err, out)
	}
	docs, err := decodeAll(out)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, d := range docs {
		kinds[str(d, "kind")]++
		if str(d, "kind") == "Deployment" {
			img := str(list(d, "spec", "template", "spec", "containers")[0], "image")
			if img == "linkd" {
				t.Errorf("the image is not set by the kustomization: %q", img)
			}
		}
	}
	for _, k := range []string{"Deployment", "Service", "PodDisruptionBudget", "ConfigMap"} {
		if kinds[k] != 1 {
			t.Errorf("kustomize built %d %s, want 1", kinds[k], k)
		}
	}
	if kinds["Secret"] != 0 {
		t.Errorf("kustomize built a Secret from the example")
	}
}

// The checks must catch what they are for: each case breaks one thing in
// a copy of the real files and expects a problem that names it.
func TestChecksCatch(t *testing.T) {
	t.Parallel()
	known := settings(t)
	composeText, cfgText := readFile(t, composeMany), readFile(t, haproxyCfg)
	parse := func(t *testing.T, text string) map[string]any {
		docs, err := decodeAll([]byte(text))
		if err != nil || len(docs) != 1 {
			t.Fatalf("%v, %d documents", err, len(docs))
		}
		return docs[0]
	}
	// replace fails the case when old is not in text: a case that changes
	// nothing would pass for the wrong reason.
	replace := func(t *testing.T, text, old, new string) string {
		t.Helper()
		if !strings.Contains(text, old) {
			t.Fatalf("%q is not in the file any more: update this case", old)
		}
		return strings.Replace(text, old, new, 1)
	}
	compose := []struct {
		name      string
		edit      func(c map[string]any)
		cfg       func(t *testing.T, s string) string
		wantMatch string
	}{
		{name: "shared volume", edit: func(c map[string]any) {
			dict(c, "services", "linkd-2")["volumes"] = []any{"linkd-1-data:/data"}
		}, wantMatch: "mounted by"},
		{name: "no data volume", edit: func(c map[string]any) {
			delete(dict(c, "services", "linkd-3"), "volumes")
		}, wantMatch: "no volume at"},
		{name: "other secret", edit: func(c map[string]any) {
			dict(c, "services", "linkd-3", "environment")["LINKD_SECRET"] = "00"
		}, wantMatch: "LINKD_SECRET"},
		{name: "two instances", edit: func(c map[string]any) {
			delete(dict(c, "services"), "linkd-3")
		}, wantMatch: "2 linkd instances"},
		{name: "unknown setting", edit: func(c map[string]any) {
			dict(c, "services", "linkd-1", "environment")["LINKD_NO_SUCH"] = "x"
		}, wantMatch: "LINKD_NO_SUCH"},
		{name: "not waiting for kafka", edit: func(c map[string]any) {
			dict(c, "services", "linkd-2", "depends_on", "kafka")["condition"] = "service_started"
		}, wantMatch: "kafka to be healthy"},
		{name: "health check elsewhere", cfg: func(t *testing.T, s string) string {
			return replace(t, s, "uri /healthz", "uri /metrics")
		}, wantMatch: "/healthz"},
		{name: "server missing", cfg: func(t *testing.T, s string) string {
			return replace(t, s, "server linkd-3 linkd-3:8080", "")
		}, wantMatch: "linkd-3 is not a server"},
		{name: "wrong port", cfg: func(t *testing.T, s string) string {
			return replace(t, s, "linkd-2:8080", "linkd-2:9090")
		}, wantMatch: "port 9090"},
		{name: "not round robin", cfg: func(t *testing.T, s string) string {
			return replace(t, s, "balance roundrobin", "balance source")
		}, wantMatch: "roundrobin"},
	}
	for _, tc := range compose {
		t.Run("compose/"+tc.name, func(t *testing.T) {
			c, cfg := parse(t, composeText), cfgText
			if tc.edit != nil {
				tc.edit(c)
			}
			if tc.cfg != nil {
				cfg = tc.cfg(t, cfg)
			}
			expect(t, checkCompose(c, cfg, known), tc.wantMatch)
		})
	}

	k8s := []struct {
		name      string
		edit      func(m manifests)
		wantMatch string
	}{
		{name: "two replicas", edit: func(m manifests) {
			dict(m.byKind["Deployment"][0], "spec")["replicas"] = 2
		}, wantMatch: "replicas"},
		{name: "ready on /metrics", edit: func(m manifests) {
			dict(container(m), "readinessProbe", "httpGet")["path"] = "/metrics"
		}, wantMatch: "readiness"},
		{name: "budget selects nothing", edit: func(m manifests) {
			dict(m.byKind["PodDisruptionBudget"][0], "spec", "selector")["matchLabels"] = map[string]any{"app": "other"}
		}, wantMatch: "PodDisruptionBudget"},
		{name: "service selects nothing", edit: func(m manifests) {
			dict(m.byKind["Service"][0], "spec")["selector"] = map[string]any{"app": "other"}
		}, wantMatch: "Service"},
		{name: "unknown setting in the ConfigMap", edit: func(m manifests) {
			dict(m.byKind["ConfigMap"][0], "data")["LINKD_NO_SUCH"] = "x"
		}, wantMatch: "LINKD_NO_SUCH"},
		{name: "secret in plain sight", edit: func(m manifests) {
			for _, e := range list(container(m), "env") {
				if str(e, "name") == "LINKD_SECRET" {
					delete(e.(map[string]any), "valueFrom")
					e.(map[string]any)["value"] = "00"
				}
			}
		}, wantMatch: "LINKD_SECRET does not come from the Secret"},
		{name: "data on a persistent claim", edit: func(m manifests) {
			for _, v := range list(m.byKind["Deployment"][0], "spec", "template", "spec", "volumes") {
				if str(v, "name") == "data" {
					delete(v.(map[string]any), "emptyDir")
					v.(map[string]any)["persistentVolumeClaim"] = map[string]any{"claimName": "x"}
				}
			}
		}, wantMatch: "neither emptyDir"},
		{name: "surge of none", edit: func(m manifests) {
			dict(m.byKind["Deployment"][0], "spec", "strategy", "rollingUpdate")["maxUnavailable"] = 1
		}, wantMatch: "maxUnavailable 0"},
	}
	for _, tc := range k8s {
		t.Run("kubernetes/"+tc.name, func(t *testing.T) {
			m := readManifests(t)
			tc.edit(m)
			expect(t, checkKubernetes(m, known), tc.wantMatch)
		})
	}

	if secs, err := parseHAProxy("  indented before any section\n"); err == nil {
		t.Errorf("parseHAProxy accepted a line outside a section: %v", secs)
	}
	if got := env(map[string]any{"environment": []any{"A=1", "B=x=y"}}); got["A"] != "1" || got["B"] != "x=y" {
		t.Errorf("env of a list: %v", got)
	}
	if got := mounts(map[string]any{"volumes": []any{"v:/data:ro", map[string]any{"source": "w", "target": "/x"}}}); len(got) != 2 || got[0] != (mount{"v", "/data"}) || got[1] != (mount{"w", "/x"}) {
		t.Errorf("mounts: %v", got)
	}
}

func container(m manifests) map[string]any {
	c, _ := list(m.byKind["Deployment"][0], "spec", "template", "spec", "containers")[0].(map[string]any)
	return c
}

// expect fails the test unless one of p contains want.
func expect(t *testing.T, p problems, want string) {
	t.Helper()
	if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, want) }) {
		t.Errorf("no problem mentions %q; found %q", want, p)
	}
}
