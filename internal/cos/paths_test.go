package cos_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/infrastate/backend-operator/internal/cos"
)

// TestNewRefusesPathEscapes checks that no prefix or key can move the
// state objects out of the prefix: ".." segments are refused, with the
// field named.
func TestNewRefusesPathEscapes(t *testing.T) {
	valid := cos.Config{Bucket: "states-1250000000", Region: "ap-guangzhou", Prefix: "team-a/env", Key: "app.tfstate"}
	cases := map[string]struct {
		edit      func(*cos.Config)
		wantField string // "" when the config is valid
	}{
		"valid":                        {edit: func(*cos.Config) {}},
		"dots inside a prefix segment": {edit: func(c *cos.Config) { c.Prefix = "a..b/..c/d.." }},
		"dots inside a key segment":    {edit: func(c *cos.Config) { c.Key = "..state/x..y" }},
		"dotted key name":              {edit: func(c *cos.Config) { c.Key = ".terraform.tfstate" }},
		"prefix ..":                    {edit: func(c *cos.Config) { c.Prefix = ".." }, wantField: "prefix"},
		"prefix escaping to a sibling": {edit: func(c *cos.Config) { c.Prefix = "../../other-team" }, wantField: "prefix"},
		"prefix .. in the middle":      {edit: func(c *cos.Config) { c.Prefix = "team-a/../../other-team/env" }, wantField: "prefix"},
		"prefix ending with ..":        {edit: func(c *cos.Config) { c.Prefix = "team-a/env/.." }, wantField: "prefix"},
		"prefix ending with ../":       {edit: func(c *cos.Config) { c.Prefix = "team-a/../" }, wantField: "prefix"},
		"key ..":                       {edit: func(c *cos.Config) { c.Key = ".." }, wantField: "key"},
		"key escaping the prefix":      {edit: func(c *cos.Config) { c.Key = "../../other-team/env/terraform.tfstate" }, wantField: "key"},
		"key .. in the middle":         {edit: func(c *cos.Config) { c.Key = "dir/../../x" }, wantField: "key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := valid
			tc.edit(&cfg)
			_, err := cos.New(cfg)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("New() = %v, want no error", err)
				}
				return
			}
			if !errors.Is(err, cos.ErrInvalidConfig) {
				t.Fatalf("New() = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("New() = %q, want it to name the %s", err, tc.wantField)
			}
		})
	}
}

// TestWorkspaceNames checks the workspace names every read refuses
// before sending anything: blank names, and names whose state key would
// leave the workspace's directory (".." segments) or collapse onto the
// prefix (".", "./x").
func TestWorkspaceNames(t *testing.T) {
	reads := map[string]func(c *cos.Client, workspace string) error{
		"ReadLock": func(c *cos.Client, w string) error { _, err := c.ReadLock(context.Background(), w); return err },
		"StreamState": func(c *cos.Client, w string) error {
			_, _, err := c.StreamState(context.Background(), w, func(io.Reader) error { return nil })
			return err
		},
	}
	cases := map[string]struct {
		workspace string
		refused   bool
	}{
		"named":                  {workspace: "staging"},
		"dots inside the name":   {workspace: "a..b"},
		"leading dot":            {workspace: ".hidden"},
		"blank":                  {workspace: " ", refused: true},
		".":                      {workspace: ".", refused: true},
		"..":                     {workspace: "..", refused: true},
		"escaping the prefix":    {workspace: "../../other-team", refused: true},
		".. after a name":        {workspace: "staging/..", refused: true},
		".. in the middle":       {workspace: "a/../../b", refused: true},
		". segment":              {workspace: "./staging", refused: true},
		"trailing . segment":     {workspace: "staging/.", refused: true},
		"escaping, with slashes": {workspace: "..//..//x", refused: true},
	}
	for readName, read := range reads {
		for name, tc := range cases {
			t.Run(readName+"/"+name, func(t *testing.T) {
				srv := newServer(t)
				err := read(newClient(t, srv, baseConfig()), tc.workspace)
				if got := errors.Is(err, cos.ErrInvalidConfig); got != tc.refused {
					t.Fatalf("%s(%q) = %v; refused %t, want %t", readName, tc.workspace, err, got, tc.refused)
				}
				if !tc.refused {
					return
				}
				if !strings.Contains(err.Error(), "workspace") {
					t.Errorf("%s(%q) = %q, want it to name the workspace", readName, tc.workspace, err)
				}
				if n := srv.Requests(); n != 0 {
					t.Errorf("%s(%q) sent %d requests, want none", readName, tc.workspace, n)
				}
			})
		}
	}
}
