"""People: invitations, single sign-on, sign-in and the limits on failed sign-ins (django-axes)."""

from apps.core import env

# --- Users, sign-in and single sign-on ---
INVITATION_TTL_DAYS = env.positive_int("INVITATION_TTL_DAYS", 7)
SSO_TOKEN_TTL = env.positive_int("SSO_TOKEN_TTL", 300)
SSO_TOKEN_HISTORY_DAYS = env.positive_int("SSO_TOKEN_HISTORY_DAYS", 7)
# A session started by an SSO link reaches API keys, webhook secrets, users' roles and publishing
# destinations only after its person types their password; that lasts this many seconds (apps/core/step_up.py).
STEP_UP_TTL = env.positive_int("STEP_UP_TTL", 7200)
# The e-mailed link that sets a first password (for users who only ever signed in through SSO)
# works once and for this many seconds; one such e-mail per user per PASSWORD_LINK_INTERVAL seconds.
PASSWORD_RESET_TIMEOUT = env.positive_int("PASSWORD_LINK_TTL", 3600)
PASSWORD_LINK_INTERVAL = env.positive_int("PASSWORD_LINK_INTERVAL", 300)
LOGIN_URL = "web-login"
LOGIN_REDIRECT_URL = "web-home"

# --- Failed sign-ins ---
# Failed logins per client address per 15 minutes; past it admin-site login attempts get 429.
ADMIN_LOGIN_FAILURE_LIMIT = env.limit("ADMIN_LOGIN_FAILURE_LIMIT", "10")
# Failed sign-ins per e-mail (stripped, lower-case; known to the service or not) per clock hour, from any
# address; past it, password sign-ins for that e-mail get 429 until the hour ends, and its account's
# admins (an operator's: the operators) get one e-mail. Twice the address's limit: a person mistyping
# from one address meets that one first; guessing spread over many addresses gets 20 tries an hour.
SIGN_IN_FAILURE_LIMIT_PER_EMAIL = env.limit("SIGN_IN_FAILURE_LIMIT_PER_EMAIL", "20")
# django-axes counts them (apps/users/sign_in_limits.py): by client address as the API's rate limits see it
# (NUM_PROXIES), in the default cache, forgotten 15 minutes after the address's last failure. The
# attempt that reaches the limit gets the form back; later ones get 429 with Retry-After until then.
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_FAILURE_LIMIT = "apps.users.sign_in_limits.admin_login_failure_limit"
AXES_COOLOFF_TIME = "apps.users.sign_in_limits.admin_login_cool_off"
AXES_CLIENT_IP_CALLABLE = "apps.api.ratelimit.client_address"
# Where the e-mail is in the credentials (for its budget): authenticate()'s keyword, the sign-in forms'
# field. axes' default, USERNAME_FIELD ("email"), is not in what user_login_failed reports.
AXES_USERNAME_FORM_FIELD = "username"
AXES_HANDLER = "apps.users.sign_in_limits.LoginFailureHandler"
AXES_LOCKOUT_CALLABLE = "apps.users.sign_in_limits.login_throttled"
AXES_HTTP_RESPONSE_CODE = 429
# Refused attempts are not counted, so they do not prolong the lockout; a success does not clear it.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_RESET_ON_SUCCESS = False
# Nothing is stored in axes' tables, so the admin has nothing to show; no start-up banner in the logs.
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False
