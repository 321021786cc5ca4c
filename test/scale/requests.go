package main

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// requestKey identifies a group of API requests the way the API server's
// apiserver_request_total counter labels them.
type requestKey struct {
	// Verb is the API verb in upper case: GET, LIST, WATCH, POST, PUT,
	// PATCH, APPLY, DELETE or DELETECOLLECTION.
	Verb string
	// Resource is the plural resource name, for example httpbackends.
	Resource string
	// Subresource is status, scale and the like; empty for the object
	// itself.
	Subresource string
	// Code is the HTTP status code of the answer, as text.
	Code string
}

// requestCounts counts API requests by key.
type requestCounts map[requestKey]int64

// minus returns c minus other, without the keys whose count is zero or
// less: a request of other that c does not hold (counted on one side of a
// snapshot and not the other) cannot make a count negative.
func (c requestCounts) minus(other requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		if d := v - other[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// writeVerbs are the verbs that change objects, in the order they are
// printed; every other verb reads.
var writeVerbs = []string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}

// isWrite reports whether verb changes objects.
func isWrite(verb string) bool { return slices.Contains(writeVerbs, verb) }

// verbOrder ranks verbs for printing: writes first, then GET and LIST,
// then anything else.
func verbOrder(verb string) int {
	if i := slices.Index(writeVerbs, verb); i >= 0 {
		return i
	}
	switch verb {
	case "GET":
		return len(writeVerbs)
	case "LIST":
		return len(writeVerbs) + 1
	}
	return len(writeVerbs) + 2
}

// operatorResources are the resources whose requests the table shows: what
// the operator reads and writes. Requests on other resources come from the
// API server's own controllers (its leases, endpoints, flow control
// objects), which the counter cannot tell apart from anyone else's.
var operatorResources = map[string]bool{
	"httpbackends": true, "cosbackends": true, "remotestates": true,
	"statelocks": true, "outputgrants": true, "statehistories": true, "staterestores": true,
	"secrets": true, "configmaps": true, "events": true,
}

// requestGroup is the requests of one verb on one resource (and
// subresource), with their count by status code.
type requestGroup struct {
	verb, resource string
	total          int64
	byCode         map[string]int64
}

// groupRequests groups counts by verb and resource/subresource, keeping
// only the operator's resources and leaving out WATCH: a watch is counted
// by the API server when it ends, which has little to do with when it was
// made. Groups come in print order: writes, then reads, each by resource.
func groupRequests(c requestCounts) []requestGroup {
	groups := map[[2]string]*requestGroup{}
	for k, v := range c {
		if v <= 0 || k.Verb == "WATCH" || !operatorResources[k.Resource] {
			continue
		}
		res := k.Resource
		if k.Subresource != "" {
			res += "/" + k.Subresource
		}
		id := [2]string{k.Verb, res}
		g := groups[id]
		if g == nil {
			g = &requestGroup{verb: k.Verb, resource: res, byCode: map[string]int64{}}
			groups[id] = g
		}
		g.total += v
		g.byCode[k.Code] += v
	}
	out := make([]requestGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b requestGroup) int {
		return cmp.Or(cmp.Compare(verbOrder(a.verb), verbOrder(b.verb)), cmp.Compare(a.verb, b.verb), cmp.Compare(a.resource, b.resource))
	})
	return out
}

// formatRequests prints counts compactly, for example
// "POST configmaps 1000, PATCH httpbackends/status 1020(409:20), GET secrets 3000":
// the operator's resources only (see groupRequests), and after a count
// the codes outside 2xx with their share of it. No request prints "none".
func formatRequests(c requestCounts) string {
	groups := groupRequests(c)
	if len(groups) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		s := fmt.Sprintf("%s %s %d", g.verb, g.resource, g.total)
		var odd []string
		for _, code := range slices.Sorted(maps.Keys(g.byCode)) {
			if !strings.HasPrefix(code, "2") {
				odd = append(odd, fmt.Sprintf("%s:%d", code, g.byCode[code]))
			}
		}
		if len(odd) > 0 {
			s += "(" + strings.Join(odd, ",") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// requestTotals sums the writes and the reads (GET and LIST) among the
// operator's resources, as groupRequests selects them.
func requestTotals(c requestCounts) (writes, reads int64) {
	for _, g := range groupRequests(c) {
		switch {
		case isWrite(g.verb):
			writes += g.total
		case g.verb == "GET" || g.verb == "LIST":
			reads += g.total
		}
	}
	return writes, reads
}

// classifyRequest names an API request as the API server's metrics do:
// the verb (a GET of a collection is LIST, or WATCH with watch=true; a
// DELETE of a collection is DELETECOLLECTION; a PATCH with an apply patch
// is APPLY), the resource and the subresource. ok is false for requests
// that are not on a resource (/metrics, /version, discovery).
func classifyRequest(method string, u *url.URL, contentType string) (verb, resource, subresource string, ok bool) {
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	var rest []string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		rest = segs[2:] // api/v1/...
	case len(segs) >= 4 && segs[0] == "apis":
		rest = segs[3:] // apis/group/version/...
	default:
		return "", "", "", false
	}
	// namespaces/<ns>/<resource>/... unless it is a namespace's own
	// subresource (namespaces/<ns>/status).
	namespaceSubresource := len(rest) == 3 && (rest[2] == "status" || rest[2] == "finalize")
	if len(rest) >= 3 && rest[0] == "namespaces" && !namespaceSubresource {
		rest = rest[2:]
	}
	var name string
	resource = rest[0]
	if len(rest) > 1 {
		name = rest[1]
	}
	if len(rest) > 2 {
		subresource = rest[2]
	}
	if resource == "" {
		return "", "", "", false
	}

	q := u.Query()
	watching := q.Get("watch") == "true" || q.Get("watch") == "1"
	switch method {
	case "GET":
		switch {
		case watching:
			verb = "WATCH"
		case name == "":
			verb = "LIST"
		default:
			verb = "GET"
		}
	case "DELETE":
		verb = "DELETE"
		if name == "" {
			verb = "DELETECOLLECTION"
		}
	case "PATCH":
		verb = "PATCH"
		if strings.HasPrefix(contentType, "application/apply-patch") {
			verb = "APPLY"
		}
	default:
		verb = method
	}
	return verb, resource, subresource, true
}
