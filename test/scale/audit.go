package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// The API server's audit log tells the shards' managers apart, which its
// metrics cannot: each shard's manager has a user of its own, and the
// audit policy records the writes of those users, and nothing else (the
// one manager, the harness and the floor are not recorded).

// shardUser is the API user of the manager of shard.
func shardUser(shard string) string { return "scale-shard-" + shard }

// auditPolicy is the API server's audit policy: the writes of the
// shards' managers, at the Metadata level, once answered.
func auditPolicy() string {
	users := make([]string, 0, len(shardNames))
	for _, s := range shardNames {
		users = append(users, shardUser(s))
	}
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + strings.Join(users, `", "`) + `"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`
}

// auditEvent is the part of an audit.k8s.io/v1 Event the harness reads.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// auditVerbs maps the audit log's verbs to apiserver_request_total's.
var auditVerbs = map[string]string{
	"create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETECOLLECTION",
}

// auditWrites are the writes of one manager the audit log recorded.
type auditWrites struct {
	// requests counts them as the API server's metrics would.
	requests requestCounts
	// objects holds the objects written, by resource.
	objects map[string]map[types.NamespacedName]bool
}

// String prints the writes as formatRequests does, then the number of
// objects written of each resource: "PATCH statelocks/status 9(409:7)
// on 2 statelocks"; "none" without writes.
func (w auditWrites) String() string {
	if len(w.requests) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(w.objects))
	for _, res := range slices.Sorted(maps.Keys(w.objects)) {
		parts = append(parts, fmt.Sprintf("%d %s", len(w.objects[res]), res))
	}
	return formatRequests(w.requests) + " on " + strings.Join(parts, ", ")
}

// parseAudit reads audit log lines (one JSON event each) from r and
// returns, per shard, the writes of its manager's user; users maps a user
// name to its shard. Events of other users, of other stages than
// ResponseComplete, and without an object are left out.
func parseAudit(r io.Reader, users map[string]string) (map[string]auditWrites, error) {
	out := map[string]auditWrites{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 4<<20)
	for s.Scan() {
		line := s.Bytes()
		if len(line) == 0 {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		shard, ok := users[e.User.Username]
		verb := auditVerbs[e.Verb]
		if !ok || verb == "" || e.Stage != "ResponseComplete" || e.ObjectRef == nil {
			continue
		}
		w, ok := out[shard]
		if !ok {
			w = auditWrites{requests: requestCounts{}, objects: map[string]map[types.NamespacedName]bool{}}
			out[shard] = w
		}
		code := 0
		if e.ResponseStatus != nil {
			code = e.ResponseStatus.Code
		}
		ref := e.ObjectRef
		w.requests[requestKey{Verb: verb, Resource: ref.Resource, Subresource: ref.Subresource, Code: fmt.Sprint(code)}]++
		if w.objects[ref.Resource] == nil {
			w.objects[ref.Resource] = map[types.NamespacedName]bool{}
		}
		w.objects[ref.Resource][types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}] = true
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	return out, nil
}

// auditWritesNote prints each shard's writes: "writes by manager (API
// server audit log): a PATCH statelocks/status 9(409:7) on 2 statelocks;
// b none".
func auditWritesNote(writes map[string]auditWrites) string {
	parts := make([]string, 0, len(shardNames))
	for _, s := range shardNames {
		parts = append(parts, s+" "+writes[s].String())
	}
	return "writes by manager (API server audit log): " + strings.Join(parts, "; ")
}

// auditLog is the API server's audit log file, read from where a phase
// began.
type auditLog struct {
	path string
}

// offset is the log's size now: where the next phase's events begin.
func (a auditLog) offset() (int64, error) {
	info, err := os.Stat(a.path)
	switch {
	case os.IsNotExist(err):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("reading the audit log: %w", err)
	}
	return info.Size(), nil
}

// writesSince reads the shards' writes the log recorded from offset on.
func (a auditLog) writesSince(offset int64) (map[string]auditWrites, error) {
	f, err := os.Open(a.path)
	switch {
	case os.IsNotExist(err):
		return map[string]auditWrites{}, nil
	case err != nil:
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	// A line the API server is writing now is not complete yet.
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	users := map[string]string{}
	for _, s := range shardNames {
		users[shardUser(s)] = s
	}
	return parseAudit(bytes.NewReader(b), users)
}
