package stateserver

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gitlabCreated finds the server's lock time in GitLab's LOCK answers.
var gitlabCreated = regexp.MustCompile(`"Created":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"`)

func normalizeCreated(body string) string {
	return gitlabCreated.ReplaceAllString(body, `"Created":"<lock time>"`)
}

// TestGitLab checks the GitLab mode against what GitLab's source does,
// one scripted exchange per behaviour, over real TCP.
func TestGitLab(t *testing.T) {
	const (
		addr  = "/api/v4/projects/42/terraform/state/prod"
		lockA = addr + "/lock"
	)
	users := []GitLabUser{
		{Name: "maintainer", Token: "glpat-maintainer"},
		{Name: "developer", Token: "glpat-developer", Role: GitLabDeveloper},
	}
	a, b := lockInfo("lock-a"), lockInfo("lock-b")
	state1, state2 := []byte(`{"version":4,"serial":1,"lineage":"l"}`), []byte(`{"version":4,"lineage":"l","serial":2}`)
	m := func(method, path string, body []byte, want response) exchange {
		return exchange{method: method, path: path, body: body, user: "any", pass: "glpat-maintainer", want: want}
	}
	dev := func(method, path string, body []byte, want response) exchange {
		return exchange{method: method, path: path, body: body, user: "any", pass: "glpat-developer", want: want}
	}
	msg := func(status int, text string) response {
		return response{Status: status, Body: `{"message":"` + text + `"}`}
	}
	holderA := func(requester string) string {
		return `{"Operation":"OperationTypeApply","Info":"","Version":"1.5.7","Path":"","ID":"` + requester + `","Who":"maintainer","Created":"<lock time>"}`
	}
	notFound := msg(http.StatusNotFound, "404 Not found")
	cases := map[string][]exchange{
		"authentication": {
			{method: http.MethodGet, path: addr, want: msg(http.StatusUnauthorized, "401 Unauthorized")},
			{method: http.MethodGet, path: addr, user: "maintainer", pass: "wrong", want: msg(http.StatusUnauthorized, "401 Unauthorized")},
			m(http.MethodGet, addr, nil, notFound),
			m(http.MethodGet, "/state/prod", nil, msg(http.StatusNotFound, "404 Not Found")),
			m(http.MethodGet, "/api/v4/projects/group%2Fproject/terraform/state/prod", nil, msg(http.StatusNotFound, "404 Not Found")),
		},
		"LOCK needs every key; conflicts name the holder's ID and user, and echo the request": {
			m(http.MethodPost, lockA, []byte(`{"ID":"x","Who":"y"}`), response{Status: http.StatusBadRequest,
				Body: `{"error":"Operation is missing, Info is missing, Version is missing, Created is missing, Path is missing"}`}),
			m(http.MethodGet, addr, nil, notFound),
			m(http.MethodPost, lockA, a, response{Status: http.StatusOK, Body: holderA("lock-a")}),
			m(http.MethodGet, addr, nil, response{Status: http.StatusNoContent}),
			m(http.MethodPost, lockA, a, response{Status: http.StatusConflict, Body: holderA("lock-a")}),
			m(http.MethodPost, lockA, []byte(`{"ID":"lock-b","Operation":"OperationTypePlan","Info":"i","Who":"w","Version":"v","Created":"c","Path":"p"}`),
				response{Status: http.StatusConflict, Body: `{"Operation":"OperationTypePlan","Info":"i","Version":"v","Path":"p","ID":"lock-a","Who":"maintainer","Created":"<lock time>"}`}),
		},
		"UNLOCK reads only the ID, from the body or the query": {
			m(http.MethodDelete, lockA, nil, response{Status: http.StatusOK, Body: "200"}),
			m(http.MethodGet, addr, nil, response{Status: http.StatusNoContent}),
			m(http.MethodPost, lockA, a, response{Status: http.StatusOK, Body: holderA("lock-a")}),
			m(http.MethodDelete, lockA, b, response{Status: http.StatusConflict, Body: "409"}),
			m(http.MethodDelete, lockA+"?ID=lock-b", nil, response{Status: http.StatusConflict, Body: "409"}),
			m(http.MethodDelete, lockA+"?ID=lock-b", []byte(`{"ID":"lock-a"}`), response{Status: http.StatusOK, Body: "200"}),
			m(http.MethodDelete, lockA, a, response{Status: http.StatusConflict, Body: "409"}),
			m(http.MethodPost, lockA, a, response{Status: http.StatusOK, Body: holderA("lock-a")}),
			m(http.MethodDelete, lockA+"?ID=lock-a", nil, response{Status: http.StatusOK, Body: "200"}),
			m(http.MethodPost, lockA, b, response{Status: http.StatusOK, Body: holderA("lock-b")}),
			m(http.MethodDelete, lockA, []byte{}, response{Status: http.StatusOK, Body: "200"}),
			m(http.MethodPost, lockA, a, response{Status: http.StatusOK, Body: holderA("lock-a")}),
		},
		"writes under a lock carry its ID; versions are kept by serial": {
			m(http.MethodPost, addr, state1, response{Status: http.StatusOK}),
			m(http.MethodPost, addr, state1, msg(http.StatusUnprocessableEntity, "a version with this serial is already stored")),
			m(http.MethodPost, addr, []byte{}, response{Status: http.StatusNoContent}),
			m(http.MethodPost, lockA, a, response{Status: http.StatusOK, Body: holderA("lock-a")}),
			m(http.MethodPost, addr, state2, msg(http.StatusInternalServerError, "500 Internal Server Error")),
			m(http.MethodPost, addr+"?ID=lock-b", state2, msg(http.StatusInternalServerError, "500 Internal Server Error")),
			m(http.MethodPost, addr+"?ID=lock-a", state2, response{Status: http.StatusOK}),
			m(http.MethodGet, addr, nil, response{Status: http.StatusOK, Body: string(state2)}),
			m(http.MethodDelete, addr, nil, response{Status: http.StatusOK}),
			m(http.MethodDelete, lockA, a, response{Status: http.StatusOK, Body: "200"}),
			m(http.MethodPost, addr+"?ID=lock-a", []byte(`{"serial":3}`), msg(http.StatusInternalServerError, "500 Internal Server Error")),
			m(http.MethodGet, addr+"/versions/1", nil, response{Status: http.StatusOK, Body: string(state1)}),
			m(http.MethodGet, addr+"/versions/x", nil, response{Status: http.StatusBadRequest, Body: `{"error":"serial is invalid"}`}),
			m(http.MethodDelete, addr+"/versions/2", nil, response{Status: http.StatusNoContent}),
			m(http.MethodGet, addr+"/versions/2", nil, notFound),
			m(http.MethodGet, addr, nil, response{Status: http.StatusOK, Body: string(state1)}),
			m(http.MethodDelete, addr, nil, response{Status: http.StatusOK}),
			m(http.MethodGet, addr, nil, notFound),
			m(http.MethodGet, addr+"/versions/1", nil, notFound),
			m(http.MethodDelete, addr, nil, notFound),
		},
		"a Developer reads but changes nothing": {
			m(http.MethodPost, addr, state1, response{Status: http.StatusOK}),
			dev(http.MethodGet, addr, nil, response{Status: http.StatusOK, Body: string(state1)}),
			dev(http.MethodGet, addr+"/versions/1", nil, response{Status: http.StatusOK, Body: string(state1)}),
			dev(http.MethodPost, lockA, []byte(`{}`), response{Status: http.StatusBadRequest,
				Body: `{"error":"ID is missing, Operation is missing, Info is missing, Who is missing, Version is missing, Created is missing, Path is missing"}`}),
			dev(http.MethodPost, lockA, a, msg(http.StatusForbidden, "403 Forbidden")),
			dev(http.MethodDelete, lockA, nil, msg(http.StatusForbidden, "403 Forbidden")),
			dev(http.MethodPost, addr, state2, msg(http.StatusForbidden, "403 Forbidden")),
			dev(http.MethodDelete, addr+"/versions/1", nil, msg(http.StatusForbidden, "403 Forbidden")),
			dev(http.MethodDelete, addr, nil, msg(http.StatusForbidden, "403 Forbidden")),
			m(http.MethodGet, addr, nil, response{Status: http.StatusOK, Body: string(state1)}),
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, []Option{WithGitLab(users...)}, steps, normalizeCreated)
		})
	}
}

// TestGitLabDirStore checks that a GitLab state, its versions and its lock
// survive a restart of a server on the same directory.
func TestGitLabDirStore(t *testing.T) {
	dir := t.TempDir()
	const addr = "/api/v4/projects/7/terraform/state/team.a%20b"
	users := []GitLabUser{{Name: "ci", Token: "t"}}
	serve := func(steps []exchange) {
		t.Helper()
		store, err := NewDirStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		ts := startServer(t, New(store, WithGitLab(users...)))
		for i, s := range steps {
			req, err := http.NewRequestWithContext(t.Context(), s.method, ts.URL+s.path, bytes.NewReader(s.body))
			if err != nil {
				t.Fatal(err)
			}
			req.SetBasicAuth("ci", "t")
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := response{Status: resp.StatusCode, Body: normalizeCreated(string(body))}
			if diff := cmp.Diff(s.want, got); diff != "" {
				t.Errorf("step %d, %s %s (-want +got):\n%s", i, s.method, s.path, diff)
			}
		}
		ts.Close()
	}
	serve([]exchange{
		{method: http.MethodPost, path: addr, body: []byte(`{"serial":1}`), want: response{Status: http.StatusOK}},
		{method: http.MethodPost, path: addr + "/lock", body: lockInfo("held"), want: response{Status: http.StatusOK,
			Body: `{"Operation":"OperationTypeApply","Info":"","Version":"1.5.7","Path":"","ID":"held","Who":"ci","Created":"<lock time>"}`}},
		{method: http.MethodPost, path: addr + "?ID=held", body: []byte(`{"serial":2}`), want: response{Status: http.StatusOK}},
	})
	serve([]exchange{
		{method: http.MethodGet, path: addr, want: response{Status: http.StatusOK, Body: `{"serial":2}`}},
		{method: http.MethodGet, path: addr + "/versions/1", want: response{Status: http.StatusOK, Body: `{"serial":1}`}},
		{method: http.MethodDelete, path: addr + "/lock", body: []byte(`{"ID":"other"}`), want: response{Status: http.StatusConflict, Body: "409"}},
		{method: http.MethodDelete, path: addr + "/lock", body: []byte(`{"ID":"held"}`), want: response{Status: http.StatusOK, Body: "200"}},
	})
}
