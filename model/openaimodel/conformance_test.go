package openaimodel_test

import (
	"net/http"
	"testing"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/openaimodel"
)

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		api      string
		provider string
		wire     providertest.Wire
	}{
		{"Chat", openaimodel.APIChat, openaimodel.ProviderOpenAI, providertest.ChatWire{Model: "gpt-4o-mini-2024-07-18"}},
		{"Compatible", openaimodel.APIChat, openaimodel.ProviderCompatible, providertest.ChatWire{Model: "llama3.1:8b"}},
		{"Responses", openaimodel.APIResponses, openaimodel.ProviderOpenAI, providertest.ResponsesWire{Model: "gpt-5.5-2026-04-23"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			providertest.Conformance(t, tc.wire, http.Header{"X-Request-Id": {"req_conformance"}}, func(t *testing.T, url string) model.Model {
				return newModel(t, openaimodel.Config{Model: "m", API: tc.api, Provider: tc.provider, BaseURL: url, APIKey: "sk-test"})
			})
		})
	}
}
