/**
 * The check of a `--listen` URL, apart from the listener so that the command line is parsed (and
 * `--help` answered) without loading the MCP SDK.
 * @module
 */

/**
 * Checks a `--listen` URL: `http:`, an explicit port (0 for any), no credentials.
 *
 * @throws TypeError naming what is wrong.
 * @example
 * listenUrl('http://127.0.0.1:0/mcp');
 */
export function listenUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(`--listen must be a URL such as http://127.0.0.1:8080/mcp, got "${text}"`);
  }
  if (url.protocol !== 'http:') {
    throw new TypeError(`--listen must be an http: URL (put TLS in front of it), got "${text}"`);
  }
  // URL drops a port equal to the scheme's default, so the text itself says whether one was given.
  if (!/^http:\/\/(\[[^\]]*\]|[^/:?#]*):\d+(\/|$|\?|#)/i.test(text.trim())) {
    throw new TypeError(`--listen must name a port (0 for any free one), got "${text}"`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new TypeError(`--listen must not carry credentials, got "${text}"`);
  }
  if (url.port === '') url.port = '80';
  return url;
}
