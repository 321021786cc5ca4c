package stateserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// stores returns a constructor for each Store implementation, so that the
// contract tests run against all of them.
func stores() map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"memory": func(*testing.T) Store { return NewMemoryStore() },
		"dir": func(t *testing.T) Store {
			t.Helper()
			s, err := NewDirStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

func TestStoreContract(t *testing.T) {
	errRefused := errors.New("refused")
	cases := map[string]struct {
		seed stored
		// change returns the function given to Update; it may stage
		// documents in s.
		change  func(t *testing.T, s Store, newStore func(*testing.T) Store) func(*Record) error
		wantErr error
		want    stored
	}{
		"a new name is empty": {
			change: func(*testing.T, Store, func(*testing.T) Store) func(*Record) error {
				return func(r *Record) error {
					if r.State != nil || r.Lock != nil {
						return fmt.Errorf("fn was given %+v", r)
					}
					return nil
				}
			},
			want: stored{},
		},
		"state and lock are stored": {
			change: func(t *testing.T, s Store, _ func(*testing.T) Store) func(*Record) error {
				t.Helper()
				doc := stage(t, s, []byte("s"))
				return func(r *Record) error { r.State, r.Lock = doc, lockInfo("a"); return nil }
			},
			want: stored{State: []byte("s"), Lock: lockInfo("a")},
		},
		"an empty state stays distinct from no state": {
			change: func(t *testing.T, s Store, _ func(*testing.T) Store) func(*Record) error {
				t.Helper()
				doc := stage(t, s, []byte{})
				return func(r *Record) error { r.State = doc; return nil }
			},
			want: stored{State: []byte{}},
		},
		"fn is given the current state and lock": {
			seed: stored{State: []byte("current"), Lock: lockInfo("a")},
			change: func(t *testing.T, _ Store, _ func(*testing.T) Store) func(*Record) error {
				t.Helper()
				return func(r *Record) error {
					if got := string(readDocument(t, r.State)); got != "current" || !bytes.Equal(r.Lock, lockInfo("a")) {
						return fmt.Errorf("fn was given state %q and lock %q", got, r.Lock)
					}
					return nil
				}
			},
			want: stored{State: []byte("current"), Lock: lockInfo("a")},
		},
		"replacing the state keeps the lock": {
			seed: stored{State: []byte("old"), Lock: lockInfo("a")},
			change: func(t *testing.T, s Store, _ func(*testing.T) Store) func(*Record) error {
				t.Helper()
				doc := stage(t, s, []byte("new"))
				return func(r *Record) error { r.State = doc; return nil }
			},
			want: stored{State: []byte("new"), Lock: lockInfo("a")},
		},
		"clearing the lock keeps the state": {
			seed: stored{State: []byte("s"), Lock: lockInfo("a")},
			change: func(*testing.T, Store, func(*testing.T) Store) func(*Record) error {
				return func(r *Record) error { r.Lock = nil; return nil }
			},
			want: stored{State: []byte("s")},
		},
		"clearing the state keeps the lock": {
			seed: stored{State: []byte("s"), Lock: lockInfo("a")},
			change: func(*testing.T, Store, func(*testing.T) Store) func(*Record) error {
				return func(r *Record) error { r.State = nil; return nil }
			},
			want: stored{Lock: lockInfo("a")},
		},
		"an error writes nothing": {
			seed: stored{State: []byte("s")},
			change: func(t *testing.T, s Store, _ func(*testing.T) Store) func(*Record) error {
				t.Helper()
				doc := stage(t, s, []byte("changed"))
				return func(r *Record) error { r.State, r.Lock = doc, lockInfo("a"); return errRefused }
			},
			wantErr: errRefused,
			want:    stored{State: []byte("s")},
		},
		"a document staged by another store is refused": {
			seed: stored{State: []byte("s")},
			change: func(t *testing.T, _ Store, newStore func(*testing.T) Store) func(*Record) error {
				t.Helper()
				doc := stage(t, newStore(t), []byte("foreign"))
				return func(r *Record) error { r.State, r.Lock = doc, lockInfo("a"); return nil }
			},
			wantErr: errForeignDocument,
			want:    stored{State: []byte("s")},
		},
	}
	for storeName, newStore := range stores() {
		for name, tc := range cases {
			t.Run(storeName+"/"+name, func(t *testing.T) {
				t.Parallel()
				s := newStore(t)
				put(t, s, "n", tc.seed)
				if err := s.Update("n", tc.change(t, s, newStore)); !errors.Is(err, tc.wantErr) {
					t.Fatalf("Update error = %v, want %v", err, tc.wantErr)
				}
				if diff := cmp.Diff(tc.want, load(t, s, "n")); diff != "" {
					t.Errorf("record (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(stored{}, load(t, s, "other")); diff != "" {
					t.Errorf("another name was touched (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestStoreSnapshots checks that what a store hands out does not change under
// the caller: a loaded state keeps its content after the state is replaced
// or deleted, a staged document is invisible until installed, and the locks
// given and returned are copies.
func TestStoreSnapshots(t *testing.T) {
	for storeName, newStore := range stores() {
		t.Run(storeName, func(t *testing.T) {
			s := newStore(t)
			lock := lockInfo("a")
			put(t, s, "n", stored{State: []byte("first"), Lock: lock})
			lock[2] = 'X'

			rec, err := s.Load("n")
			if err != nil {
				t.Fatal(err)
			}
			defer rec.State.Close()
			rec.Lock[3] = 'X'

			staged := stage(t, s, []byte("second"))
			if diff := cmp.Diff(stored{State: []byte("first"), Lock: lockInfo("a")}, load(t, s, "n")); diff != "" {
				t.Errorf("record with a document staged (-want +got):\n%s", diff)
			}
			if err := s.Update("n", func(r *Record) error { r.State = staged; return nil }); err != nil {
				t.Fatal(err)
			}
			if got := string(readDocument(t, rec.State)); got != "first" {
				t.Errorf("the loaded state reads %q after an update, want %q", got, "first")
			}
			if err := s.Update("n", func(r *Record) error { r.State = nil; return nil }); err != nil {
				t.Fatal(err)
			}
			if got := string(readDocument(t, rec.State)); got != "first" {
				t.Errorf("the loaded state reads %q after a delete, want %q", got, "first")
			}
		})
	}
}

// TestStagedDocumentsLeaveNothing checks that a staged document that is
// never installed leaves no file behind once closed, and that a failing
// reader stages nothing.
func TestStagedDocumentsLeaveNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := s.Stage(strings.NewReader("never installed"))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(dirFiles(t, dir)); got != 1 {
		t.Errorf("%d files while a document is staged, want its temporary file", got)
	}
	if err := doc.Close(); err != nil {
		t.Fatal(err)
	}
	errBroken := errors.New("broken body")
	if _, err := s.Stage(io.MultiReader(strings.NewReader("part"), iotest.ErrReader(errBroken))); !errors.Is(err, errBroken) {
		t.Errorf("Stage of a failing reader: error %v, want %v", err, errBroken)
	}
	if diff := cmp.Diff(map[string]string{}, dirFiles(t, dir)); diff != "" {
		t.Errorf("files left (-want +got):\n%s", diff)
	}
}

// TestConcurrentLockers sends many LOCK requests at once, over real TCP:
// exactly one wins and every loser is told the winner's ID.
func TestConcurrentLockers(t *testing.T) {
	const lockers = 24
	for storeName, newStore := range stores() {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, New(newStore(t)))
			client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: lockers}}
			t.Cleanup(client.CloseIdleConnections)

			answers := make([]response, lockers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range lockers {
				wg.Go(func() {
					<-start
					answers[i], _ = send(t, client, MethodLock, ts.URL+"/state/contended", lockInfo(lockerID(i)), nil)
				})
			}
			close(start)
			wg.Wait()

			winner := -1
			for i, a := range answers {
				if a.Status == http.StatusOK {
					if winner >= 0 {
						t.Fatalf("lockers %d and %d both won", winner, i)
					}
					winner = i
				}
			}
			if winner < 0 {
				t.Fatalf("nobody won: %v", answers)
			}
			for i, a := range answers {
				if i == winner {
					continue
				}
				want := response{Status: http.StatusLocked, Body: string(lockInfo(lockerID(winner)))}
				if diff := cmp.Diff(want, a); diff != "" {
					t.Errorf("locker %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

// TestConcurrentUpdates runs lock, update and unlock cycles on several names
// at once; with -race this also checks the stores' locking.
func TestConcurrentUpdates(t *testing.T) {
	for storeName, newStore := range stores() {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, New(newStore(t)))
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					url := ts.URL + "/state/" + []string{"a", "b"}[i%2]
					id := lockerID(i)
					for {
						got, _ := send(t, ts.Client(), MethodLock, url, lockInfo(id), nil)
						if got.Status == http.StatusOK {
							break
						}
					}
					if got, _ := send(t, ts.Client(), http.MethodPost, url+"?ID="+id, []byte(id), nil); got.Status != http.StatusOK {
						t.Errorf("update by the holder: %v", got)
					}
					if got, _ := send(t, ts.Client(), MethodUnlock, url, lockInfo(id), nil); got.Status != http.StatusOK {
						t.Errorf("unlock by the holder: %v", got)
					}
				})
			}
			wg.Wait()
		})
	}
}

func lockerID(i int) string {
	return "locker-" + string(rune('a'+i%26)) + string(rune('0'+i/26))
}
