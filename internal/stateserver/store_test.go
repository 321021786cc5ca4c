package stateserver

import (
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stores returns a constructor for each Store implementation, so that the
// contract tests run against all of them.
func stores() map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"memory": func(*testing.T) Store { return NewMemoryStore() },
		"dir": func(t *testing.T) Store {
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
		seed    Record
		fn      func(*Record) error
		wantErr error
		want    Record
	}{
		"a new name is empty": {
			fn:   func(*Record) error { return nil },
			want: Record{},
		},
		"state and lock are stored": {
			fn:   func(r *Record) error { r.State, r.Lock = []byte("s"), lockInfo("a"); return nil },
			want: Record{State: []byte("s"), Lock: lockInfo("a")},
		},
		"an empty state stays distinct from no state": {
			fn:   func(r *Record) error { r.State = []byte{}; return nil },
			want: Record{State: []byte{}},
		},
		"clearing the lock keeps the state": {
			seed: Record{State: []byte("s"), Lock: lockInfo("a")},
			fn:   func(r *Record) error { r.Lock = nil; return nil },
			want: Record{State: []byte("s")},
		},
		"clearing the state keeps the lock": {
			seed: Record{State: []byte("s"), Lock: lockInfo("a")},
			fn:   func(r *Record) error { r.State = nil; return nil },
			want: Record{Lock: lockInfo("a")},
		},
		"an error writes nothing": {
			seed:    Record{State: []byte("s")},
			fn:      func(r *Record) error { r.State = []byte("changed"); r.Lock = lockInfo("a"); return errRefused },
			wantErr: errRefused,
			want:    Record{State: []byte("s")},
		},
	}
	for storeName, newStore := range stores() {
		for name, tc := range cases {
			t.Run(storeName+"/"+name, func(t *testing.T) {
				t.Parallel()
				s := newStore(t)
				if err := s.Update("n", func(r *Record) error { *r = tc.seed; return nil }); err != nil {
					t.Fatal(err)
				}
				if err := s.Update("n", tc.fn); !errors.Is(err, tc.wantErr) {
					t.Fatalf("Update error = %v, want %v", err, tc.wantErr)
				}
				got, err := s.Load("n")
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("record (-want +got):\n%s", diff)
				}
				other, err := s.Load("other")
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(Record{}, other); diff != "" {
					t.Errorf("another name was touched (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestStoreCopies checks that stores keep their own copies: changing a slice
// handed to Update or returned by Load later changes nothing stored.
func TestStoreCopies(t *testing.T) {
	for storeName, newStore := range stores() {
		t.Run(storeName, func(t *testing.T) {
			s := newStore(t)
			given := []byte("state")
			if err := s.Update("n", func(r *Record) error { r.State = given; return nil }); err != nil {
				t.Fatal(err)
			}
			given[1] = 'X'
			got, err := s.Load("n")
			if err != nil {
				t.Fatal(err)
			}
			got.State[0] = 'X'
			again, err := s.Load("n")
			if err != nil {
				t.Fatal(err)
			}
			if string(again.State) != "state" {
				t.Errorf("state = %q after changing a loaded copy, want %q", again.State, "state")
			}
		})
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
