package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infrastate/backend-operator/internal/testtools"
)

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notADir := filepath.Join(dir, "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pki := newTestPKI(t)
	cases := map[string]struct {
		args      []string
		env       map[string]string
		wantUsage bool
		wantErr   string
	}{
		"unknown flag": {
			args: []string{"--nope"}, wantUsage: true, wantErr: "flag provided but not defined: -nope",
		},
		"positional argument": {
			args: []string{"extra"}, wantUsage: true, wantErr: `unexpected arguments ["extra"]`,
		},
		"username without password": {
			args: []string{"--username", "admin"}, wantUsage: true, wantErr: "--username is set but $STATESERVER_PASSWORD is empty",
		},
		"password without username": {
			env: map[string]string{"STATESERVER_PASSWORD": "pw"}, wantUsage: true, wantErr: "$STATESERVER_PASSWORD is set but --username is not",
		},
		"certificate without key": {
			args: []string{"--tls-cert", pki.serverCertFile}, wantUsage: true, wantErr: "--tls-cert and --tls-key must be given together",
		},
		"key without certificate": {
			args: []string{"--tls-key", pki.serverKeyFile}, wantUsage: true, wantErr: "--tls-cert and --tls-key must be given together",
		},
		"client CA without TLS": {
			args: []string{"--client-ca", pki.caFile}, wantUsage: true, wantErr: "--client-ca needs --tls-cert and --tls-key",
		},
		"zero shutdown timeout": {
			args: []string{"--shutdown-timeout", "0s"}, wantUsage: true, wantErr: "--shutdown-timeout must be positive",
		},
		"zero body timeout": {
			args: []string{"--body-timeout", "0s"}, wantUsage: true, wantErr: "--body-timeout must be positive",
		},
		"negative idle timeout": {
			args: []string{"--idle-timeout", "-1s"}, wantUsage: true, wantErr: "--idle-timeout must be positive",
		},
		"zero header timeout": {
			args: []string{"--header-timeout", "0s"}, wantUsage: true, wantErr: "--header-timeout must be positive",
		},
		"zero connections": {
			args: []string{"--max-connections", "0"}, wantUsage: true, wantErr: "--max-connections must be positive",
		},
		"zero memory budget": {
			args: []string{"--memory-budget-mib", "0"}, wantUsage: true, wantErr: "--memory-budget-mib must be positive",
		},
		"memory budget with a data dir": {
			args: []string{"--memory-budget-mib", "64", "--data-dir", dir}, wantUsage: true, wantErr: "--memory-budget-mib has no effect with --data-dir",
		},
		"data dir is a file": {
			args: []string{"--data-dir", notADir, "--listen", "127.0.0.1:0"}, wantErr: "opening the data directory",
		},
		"missing certificate file": {
			args: []string{"--tls-cert", filepath.Join(dir, "none.crt"), "--tls-key", pki.serverKeyFile}, wantErr: "loading the TLS certificate",
		},
		"certificate and key do not match": {
			args: []string{"--tls-cert", pki.serverCertFile, "--tls-key", pki.caFile}, wantErr: "loading the TLS certificate",
		},
		"client CA without certificates": {
			args:    []string{"--tls-cert", pki.serverCertFile, "--tls-key", pki.serverKeyFile, "--client-ca", notADir},
			wantErr: "no PEM certificate in the client CA file",
		},
		"unknown conflict answer": {
			args: []string{"--conflict", "418"}, wantUsage: true, wantErr: `--conflict "418" is not one of holder-409|holder-423|text-409|text-423`,
		},
		"unknown unlock check": {
			args: []string{"--unlock", "never"}, wantUsage: true, wantErr: `--unlock "never" is not one of checks-id|exact-body|ignores-body`,
		},
		"unknown unlock bodies": {
			args: []string{"--unlock-bodies", "all"}, wantUsage: true, wantErr: `--unlock-bodies "all" is not one of any|empty|id|none`,
		},
		"GitLab without a user": {
			args: []string{"--gitlab"}, wantUsage: true, wantErr: "--gitlab needs --username and $STATESERVER_PASSWORD",
		},
		"GitLab with a lock behaviour": {
			args: []string{"--gitlab", "--username", "u", "--reentrant-lock"}, env: map[string]string{"STATESERVER_PASSWORD": "t"},
			wantUsage: true, wantErr: "--reentrant-lock has no effect with --gitlab",
		},
		"unknown GitLab role": {
			args: []string{"--gitlab", "--username", "u", "--gitlab-role", "owner"}, env: map[string]string{"STATESERVER_PASSWORD": "t"},
			wantUsage: true, wantErr: `--gitlab-role "owner" is not one of developer|maintainer`,
		},
		"GitLab role without GitLab": {
			args: []string{"--gitlab-role", "developer"}, wantUsage: true, wantErr: "--gitlab-role needs --gitlab",
		},
		"bad listen address": {
			args: []string{"--listen", "127.0.0.1:notaport"}, wantErr: "listening:",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(t.Context(), tc.args, envFunc(tc.env), io.Discard)
			if err == nil {
				t.Fatal("run succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
			if got := errors.Is(err, errUsage); got != tc.wantUsage {
				t.Errorf("errors.Is(err, errUsage) = %v, want %v", got, tc.wantUsage)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	var out testtools.SyncBuffer
	err := run(t.Context(), []string{"--help"}, envFunc(nil), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Errorf("error = %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"-listen", "-data-dir", "-username", "-tls-cert", "-tls-key", "-client-ca", "-body-timeout", "-idle-timeout",
		"-header-timeout", "-max-connections", "-memory-budget-mib", "STATESERVER_PASSWORD"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("usage does not mention %s:\n%s", f, out.String())
		}
	}
}
