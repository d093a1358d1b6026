//! The HTTP side of the load generator: a small hyper client (`http`), the SSE line parser
//! (`sse`), the OpenAI chunk shapes (`protocol`), token accounting (`tokens`, pure) and one
//! streamed request timed chunk by chunk (`stream`).

pub mod http;
pub mod protocol;
pub mod sse;
pub mod stream;
pub mod tls;
pub mod tokens;
