package main

import (
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
)

// providerFactory builds non-scripted models for network files.
func providerFactory() func(netspec.ProviderSpec) (model.Model, error) {
	return nil
}
