// Package openai serves OpenAI's APIs over baton's server core, where a
// model is a network: POST /v1/chat/completions, POST /v1/responses,
// GET /v1/models and /v1/models/{id} (docs/api.md). Each request is a run on
// a new thread seeded with the request's earlier messages, or on the
// thread its Baton-Thread-Id header names; the answer is the text of every
// assistant message of the run. Every field of a request is honoured or
// refused (400, OpenAI's error object). Mount [Protocol] on a server
// (server.Config.Protocols).
package openai
