package provider_test

import (
	"fmt"

	"github.com/batonhq/baton/model/provider"
)

// The YAML loader turns an agent's model settings into a Spec. Here a local
// Ollama server: no key is needed, and none is sent.
func ExampleNew() {
	m, err := provider.New(provider.Spec{
		Model:   "openai-compatible:llama3.1:8b",
		BaseURL: "http://localhost:11434/v1",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.(interface{ Name() string }).Name())

	_, err = provider.New(provider.Spec{Model: "gemini:gemini-2.5-pro"})
	fmt.Println(err)
	// Output:
	// openai-compatible:llama3.1:8b
	// provider: unknown model provider: "gemini" in model "gemini:gemini-2.5-pro" (want openai, openai-responses, anthropic or openai-compatible)
}
