package metricsauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Reviewer asks the API server who a token belongs to and what a user may
// do.
type Reviewer interface {
	// ReviewToken returns the TokenReview's status for token.
	ReviewToken(ctx context.Context, token string) (authenticationv1.TokenReviewStatus, error)
	// ReviewAccess returns the SubjectAccessReview's status for spec.
	ReviewAccess(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error)
}

// APIReviewer is the Reviewer that creates TokenReviews and
// SubjectAccessReviews in the API server.
type APIReviewer struct {
	// Tokens creates the TokenReviews.
	Tokens authenticationclient.TokenReviewInterface
	// Access creates the SubjectAccessReviews.
	Access authorizationclient.SubjectAccessReviewInterface
}

// ReviewToken implements Reviewer. The review names no audience, so the
// API server checks the token against its own.
func (r APIReviewer) ReviewToken(ctx context.Context, token string) (authenticationv1.TokenReviewStatus, error) {
	review, err := r.Tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.TokenReviewStatus{}, fmt.Errorf("creating a TokenReview: %w", err)
	}
	return review.Status, nil
}

// ReviewAccess implements Reviewer.
func (r APIReviewer) ReviewAccess(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
	review, err := r.Access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	return review.Status, nil
}

// accessSpec is the SubjectAccessReview of user's request verb on the
// non-resource URL path.
func accessSpec(user authenticationv1.UserInfo, verb, path string) authorizationv1.SubjectAccessReviewSpec {
	var extra map[string]authorizationv1.ExtraValue
	if len(user.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	return authorizationv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		UID:                   user.UID,
		Groups:                user.Groups,
		Extra:                 extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}
}

// tokenKey is the cache key of a token: its HMAC-SHA256 under secret, a
// key of the process's own, so that the cache holds nothing a token can be
// guessed from.
func tokenKey(secret []byte, token string) [sha256.Size]byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(token))
	var key [sha256.Size]byte
	mac.Sum(key[:0])
	return key
}

// accessKey is the cache key of an access review: a hash of every field of
// spec, each length-prefixed so that no two specs share an encoding.
func accessKey(spec authorizationv1.SubjectAccessReviewSpec) [sha256.Size]byte {
	h := sha256.New()
	write := func(s string) {
		writeLength(h, len(s))
		h.Write([]byte(s))
	}
	write(spec.User)
	write(spec.UID)
	writeLength(h, len(spec.Groups))
	for _, g := range spec.Groups {
		write(g)
	}
	keys := make([]string, 0, len(spec.Extra))
	for k := range spec.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	writeLength(h, len(keys))
	for _, k := range keys {
		write(k)
		writeLength(h, len(spec.Extra[k]))
		for _, v := range spec.Extra[k] {
			write(v)
		}
	}
	if na := spec.NonResourceAttributes; na != nil {
		write(na.Path)
		write(na.Verb)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// writeLength writes n, a length, to h.
func writeLength(h hash.Hash, n int) {
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(max(n, 0))))
}

// retriable says whether a review that failed with err may succeed if
// made again, as the kube-apiserver decides for its webhooks: a connection
// reset or lost, a 500, a timeout, a 429, or any answer that asks the
// client to come back later. A certificate, a name or a permission that is
// wrong fails at once.
func retriable(err error) bool {
	if utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		apierrors.IsInternalError(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	_, delay := apierrors.SuggestsClientDelay(err)
	return delay
}
