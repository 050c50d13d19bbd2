/**
 * The console's HTML shell: a login form that works without JavaScript, an empty `<main>` the
 * page's script fills, and the page's two assets. Nothing inline, so the strict CSP holds.
 * @module
 */

/** What the shell may say above the login form. */
export type ShellNotice = 'none' | 'wrong_token' | 'too_many_attempts';

const notices: Record<ShellNotice, string> = {
  none: '',
  wrong_token: '<p class="td-login-error" role="alert">The token was not accepted.</p>',
  too_many_attempts:
    '<p class="td-login-error" role="alert">Too many failed logins from this address; wait a minute.</p>',
};

/**
 * The shell's HTML for a console served under `basePath` (already checked: a path of plain
 * segments, so it needs no escaping beyond the attribute quoting done here).
 */
export function pageShell(basePath: string, notice: ShellNotice = 'none'): string {
  const base = escapeAttribute(basePath);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>tool-dispatcher console</title>
<link rel="stylesheet" href="${base}/assets/app.css">
<script type="module" src="${base}/assets/app.js"></script>
</head>
<body data-base-path="${base}">
<header><h1>tool-dispatcher console</h1></header>
<section id="login">
${notices[notice]}
<form method="post" action="${base}/login" autocomplete="off">
<label>Console token <input type="password" name="token" required minlength="16" autocomplete="off"></label>
<label>Your name <input type="text" name="name" maxlength="64" autocomplete="name"></label>
<button type="submit">Log in</button>
</form>
</section>
<main id="app"></main>
</body>
</html>
`;
}

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
