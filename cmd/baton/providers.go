package main

import (
	"context"
	"errors"
	"iter"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/provider"
	"github.com/batonhq/baton/netspec"
)

// providerFactory builds non-scripted models for network files through
// model/provider. With offline set (baton validate), a missing API key is
// not a problem: the model is checked but never called.
func providerFactory(offline bool) func(netspec.ProviderSpec) (model.Model, error) {
	return func(s netspec.ProviderSpec) (model.Model, error) {
		m, err := provider.New(provider.Spec{Model: s.Model, BaseURL: s.BaseURL, APIKeyEnv: s.APIKeyEnv, HTTPClient: s.HTTPClient})
		if err != nil && offline && errors.Is(err, provider.ErrMissingKey) {
			return unavailable{err}, nil
		}
		return m, err
	}
}

// unavailable is a model that cannot be called, for validation only.
type unavailable struct{ err error }

func (u unavailable) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, u.err) }
}
