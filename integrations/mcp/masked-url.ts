/**
 * A URL as the proxy may print it: any password in it masked, whether it parses or not.
 * @module
 */

/**
 * `url` with the password of its user info replaced by `***` (`redis://user:***@host`); user info
 * without a `:` is masked whole, since some clients read it as the password. Works on text that
 * is no URL at all (a typo), so that an error quoting the flag never prints a password.
 *
 * @example
 * maskedUrl('valkey://app:s3cret@cache:6379'); // 'valkey://app:***@cache:6379'
 */
export function maskedUrl(url: string): string {
  const at = url.lastIndexOf('@');
  if (at === -1) return url;
  // The user info starts after `//`, else after the scheme's `:`, else at the start.
  const slashes = url.indexOf('//');
  const scheme = url.search(/^[A-Za-z][A-Za-z0-9+.-]*:/) === 0 ? url.indexOf(':') + 1 : 0;
  const start = slashes !== -1 && slashes < at ? slashes + 2 : Math.min(scheme, at);
  const userInfo = url.slice(start, at);
  const colon = userInfo.indexOf(':');
  const masked = colon === -1 ? '***' : `${userInfo.slice(0, colon)}:***`;
  return `${url.slice(0, start)}${masked}${url.slice(at)}`;
}
