package stateclient

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestRedirects checks which redirects the client follows: within the
// same scheme, host and port, at most 10; any other is refused with
// ErrRedirectRefused, without a request to the new place, without a retry,
// and without quoting the Location.
func TestRedirects(t *testing.T) {
	t.Parallel()
	const marker = "LOCATIONBYTES"
	cases := map[string]struct {
		location     string // SELF: this server's URL, OTHER: another server's, PORT: this server's port
		refused      bool
		wantErr      string
		wantRequests int // to this server
	}{
		"relative, followed":        {location: "/elsewhere", wantRequests: 2},
		"same origin, followed":     {location: "SELF/elsewhere?q=1", wantRequests: 2},
		"other port, refused":       {location: "OTHER/state?token=" + marker, refused: true, wantErr: "another port", wantRequests: 1},
		"other host, refused":       {location: "http://127.0.0.2:PORT/" + marker + "?token=" + marker, refused: true, wantErr: "another host", wantRequests: 1},
		"other scheme, refused":     {location: "https://127.0.0.1:PORT/" + marker, refused: true, wantErr: "another scheme", wantRequests: 1},
		"endless same-host, capped": {location: "/loop", wantErr: "stopped after 10 redirects", wantRequests: 10},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			other := newServer(t, respond(http.StatusOK, smallState))
			var self *server
			self = newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					respond(http.StatusOK, smallState)(w, r)
					return
				}
				u, _ := url.Parse(self.URL)
				loc := strings.NewReplacer("SELF", self.URL, "OTHER", other.URL, "PORT", u.Port()).Replace(tc.location)
				respond(http.StatusFound, "", "Location", loc)(w, r)
			})
			cfg := fastConfig(self.URL)
			data, err := fetchAll(ctxT(t), mustNew(t, cfg))
			switch {
			case tc.wantErr == "" && (err != nil || string(data) != smallState):
				t.Fatalf("StreamState() read %q, %v; want the state", data, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("StreamState() error %v, want one containing %q", err, tc.wantErr)
			}
			if got := errors.Is(err, ErrRedirectRefused); got != tc.refused {
				t.Errorf("errors.Is(%v, ErrRedirectRefused) = %v, want %v", err, got, tc.refused)
			}
			if err != nil && strings.Contains(err.Error(), marker) {
				t.Errorf("error quotes the Location: %v", err)
			}
			if n := len(self.requests()); n != tc.wantRequests {
				t.Errorf("the server saw %d requests, want %d (no retry)", n, tc.wantRequests)
			}
			if n := len(other.requests()); n != 0 {
				t.Errorf("the other server saw %d requests, want none", n)
			}
		})
	}
}
