package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// auditLine is an audit event as kube-apiserver writes it (some fields
// shortened).
func auditLine(user, verb, stage, resource, subresource, name string, code int) string {
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"2f1addaa","stage":"` + stage + `",` +
		`"requestURI":"/apis/backends.infrastate.io/v1alpha1/namespaces/shards-0000/` + resource + `/` + name + `",` +
		`"verb":"` + verb + `","user":{"username":"` + user + `","groups":["system:masters","system:authenticated"]},` +
		`"sourceIPs":["127.0.0.1"],"userAgent":"manager/v0.0.0 (linux/amd64) kubernetes/$Format",` +
		`"objectRef":{"resource":"` + resource + `","namespace":"shards-0000","name":"` + name + `","apiGroup":"backends.infrastate.io",` +
		`"apiVersion":"v1alpha1","subresource":"` + subresource + `"}`
	if code != 0 {
		line += `,"responseStatus":{"metadata":{},"code":` + strconv.Itoa(code) + `}`
	}
	return line + `,"requestReceivedTimestamp":"2026-12-06T00:44:07.588452Z","stageTimestamp":"2026-12-06T00:44:07.635708Z"}`
}

func TestParseAudit(t *testing.T) {
	lines := []string{
		auditLine("scale-shard-a", "patch", "ResponseComplete", "statelocks", "status", "hb-00001", 409),
		auditLine("scale-shard-a", "patch", "ResponseComplete", "statelocks", "status", "hb-00001", 200),
		auditLine("scale-shard-a", "patch", "ResponseComplete", "statelocks", "status", "hb-00002", 200),
		auditLine("scale-shard-b", "patch", "ResponseComplete", "httpbackends", "", "hb-00001", 200),
		auditLine("scale-shard-b", "create", "ResponseComplete", "events", "", "hb-00001.1", 201),
		auditLine("scale-shard-b", "patch", "Panic", "httpbackends", "", "hb-00001", 0),
		auditLine("scale-manager", "patch", "ResponseComplete", "httpbackends", "", "hb-00001", 200),
		auditLine("scale-shard-a", "get", "ResponseComplete", "httpbackends", "", "hb-00001", 200),
		"",
	}
	got, err := parseAudit(strings.NewReader(strings.Join(lines, "\n")), map[string]string{"scale-shard-a": "a", "scale-shard-b": "b"})
	if err != nil {
		t.Fatal(err)
	}
	nn := func(name string) types.NamespacedName {
		return types.NamespacedName{Namespace: "shards-0000", Name: name}
	}
	want := map[string]auditWrites{
		"a": {
			requests: requestCounts{
				{Verb: "PATCH", Resource: "statelocks", Subresource: "status", Code: "409"}: 1,
				{Verb: "PATCH", Resource: "statelocks", Subresource: "status", Code: "200"}: 2,
			},
			objects: map[string]map[types.NamespacedName]bool{"statelocks": {nn("hb-00001"): true, nn("hb-00002"): true}},
		},
		"b": {
			requests: requestCounts{
				{Verb: "PATCH", Resource: "httpbackends", Code: "200"}: 1,
				{Verb: "POST", Resource: "events", Code: "201"}:        1,
			},
			objects: map[string]map[types.NamespacedName]bool{"httpbackends": {nn("hb-00001"): true}, "events": {nn("hb-00001.1"): true}},
		},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(auditWrites{})); diff != "" {
		t.Errorf("parseAudit mismatch (-want +got):\n%s", diff)
	}
	if want := "a PATCH statelocks/status 3(409:1) on 2 statelocks; b POST events 1, PATCH httpbackends 1 on 1 events, 1 httpbackends"; auditWritesNote(got) != "writes by manager (API server audit log): "+want {
		t.Errorf("auditWritesNote = %q, want it to end with %q", auditWritesNote(got), want)
	}
	if got := auditWritesNote(nil); got != "writes by manager (API server audit log): a none; b none" {
		t.Errorf("auditWritesNote(nil) = %q", got)
	}
}

func TestParseAuditRejectsGarbage(t *testing.T) {
	if _, err := parseAudit(strings.NewReader("not json\n"), nil); err == nil {
		t.Error("parseAudit of a line that is not JSON: no error")
	}
}

func TestAuditLogWritesSince(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	log := auditLog{path: path}
	if off, err := log.offset(); err != nil || off != 0 {
		t.Fatalf("offset of a missing log = %d, %v, want 0, nil", off, err)
	}
	first := auditLine("scale-shard-a", "patch", "ResponseComplete", "httpbackends", "", "hb-00001", 200) + "\n"
	second := auditLine("scale-shard-b", "patch", "ResponseComplete", "httpbackends", "", "hb-00002", 200) + "\n"
	partial := auditLine("scale-shard-b", "patch", "ResponseComplete", "httpbackends", "", "hb-00003", 200)[:40]
	if err := os.WriteFile(path, []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	off, err := log.offset()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(first+second+partial), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := log.writesSince(off)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["a"]; ok || len(got["b"].requests) != 1 {
		t.Errorf("writesSince read %v, want only shard b's one write after the offset, without the partial line", got)
	}
}

func TestAuditPolicy(t *testing.T) {
	p := auditPolicy()
	for _, want := range []string{`users: ["scale-shard-a", "scale-shard-b"]`, `"patch"`, "- level: None"} {
		if !strings.Contains(p, want) {
			t.Errorf("auditPolicy() lacks %q:\n%s", want, p)
		}
	}
}
