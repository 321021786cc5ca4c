package nslabels

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MayWatch returns whether the identity of c may list and watch
// namespaces cluster-wide, as SelfSubjectAccessReviews answer (which every
// authenticated identity may create): a manager that may not is never
// denied a request, it just does not ask.
func MayWatch(c client.Client) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		for _, verb := range []string{"list", "watch"} {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Version: "v1", Resource: "namespaces"},
			}}
			if err := c.Create(ctx, review); err != nil {
				return false, fmt.Errorf("asking whether the manager may %s namespaces: %w", verb, err)
			}
			if !review.Status.Allowed {
				return false, nil
			}
		}
		return true, nil
	}
}
