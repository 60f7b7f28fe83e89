// What the A2A clients of test.mjs (@a2a-js/sdk 0.3) and v1.mjs (1.3)
// share: how they reach a network's agent card on BATON_URL and send an
// API key.

// cardURL is the agent card URL of network on BATON_URL.
export const cardURL = (network) => `${process.env.BATON_URL}/a2a/${network}/.well-known/agent-card.json`;

// bearerFetch returns a fetch that sends key (none if not given) as a
// Bearer token.
export function bearerFetch(key) {
  return (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (key) headers.set("Authorization", `Bearer ${key}`);
    return fetch(url, { ...init, headers });
  };
}
