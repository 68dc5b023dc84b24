"""Key formats that carry their provider's prefix: each is redacted whole wherever it stands.

Written for this project from the prefixes providers document and gitleaks' maintained rule
list (github.com/gitleaks/gitleaks, config/gitleaks.toml) names; detect-secrets' plugins
(`llm.detectors`) cover others. A format joins here when its prefix is distinctive enough that
a match is a key without looking at its surroundings; a key that needs its context (a Twilio
auth token is plain hex) is a rule of `llm.secret_rules` instead.

`PREFIX_HINT` is the cheap scan the scrubber runs first: every pattern below starts with one
of its alternatives (tests/test_llm_scrub.py generates each pattern's matches and checks).
"""

from __future__ import annotations

_B62 = "A-Za-z0-9"
PROVIDER_KEYS = {
    "anthropic_key": r"\bsk-ant-[\w\-]{8,}",
    "openai_key": r"\bsk-[\w\-]{16,}",
    "stripe_key": r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}|\bwhsec_\w{16,}",
    "npm_token": r"\bnpm_[A-Za-z0-9]{30,}",
    "pypi_token": r"\bpypi-AgE[\w\-]{20,}",
    "sendgrid_key": r"\bSG\.[\w\-]{16,}\.[\w\-]{16,}",
    "google_oauth": r"\bya29\.[\w\-]{20,}|\b1//0[\w\-]{40,}|\bGOCSPX-[\w\-]{20,}",
    "github_token": r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})",
    "huggingface_token": r"\b(?:hf|api_org)_[A-Za-z0-9]{20,}",
    "google_key": r"\bAIza[0-9A-Za-z_\-]{30,}",
    "aws_key_id": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    "slack_token": r"\b(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{10,}",
    "gitlab_token": r"\bgl(?:pat|dt|ptt|rt|soat|cbt|oas|ft|imt|agent)-[\w\-]{20,}"
    r"|\bGR1348941[\w\-]{20,}",
    "prefixed_key": r"\b(?:gsk|fw|xai|pplx|nvapi|r8|pcsk|tvly|jina|csk)[_\-][A-Za-z0-9_]{20,}",
    "databricks_token": r"\bdapi[0-9a-f]{32}(?:-\d)?\b",
    "digitalocean_token": r"\bdo[opr]_v1_[0-9a-f]{64}\b",
    "age_secret_key": r"\bAGE-SECRET-KEY-1[0-9A-Z]{50,}",
    "shopify_token": r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b",
    "linear_key": r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}",
    "terraform_token": rf"\b[{_B62}]{{14}}\.atlasv1\.[{_B62}_\-=]{{40,}}",
    "vault_token": r"\bhv[sb]\.[\w\-]{24,}",
    "doppler_token": r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}",
    "postman_key": r"\bPMAK-[0-9a-f]{24}-[0-9a-f]{34}\b",
    "docker_hub_token": r"\bdckr_(?:pat|oat)_[\w\-]{20,}",
    "grafana_token": r"\bgl(?:c|sa)_[A-Za-z0-9_+/=]{32,}",
    "new_relic_key": r"\bNR(?:AK|II|JS|RA)-[A-Za-z0-9]{20,}",
    "sentry_token": r"\bsntr[yu]s?_[A-Za-z0-9_+/=]{40,}",
    "planetscale_token": r"\bpscale_(?:tkn|pw|oauth)_[\w\-=.]{32,}",
    "supabase_token": r"\bsbp_[0-9a-f]{40}\b",
    "pulumi_token": r"\bpul-[0-9a-f]{40}\b",
    "tailscale_key": r"\btskey-(?:api|auth|client|webhook)-[\w\-]{16,}",
    "langsmith_key": r"\blsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}\b",
    "atlassian_token": r"\bATATT3[\w\-=]{50,}",
    "brevo_key": r"\bxkeysib-[0-9a-f]{64}-[A-Za-z0-9]{16}\b",
    "square_token": r"\b(?:sq0(?:atp|csp)-|EAAA)[\w\-]{22,}",
    "notion_token": r"\bntn_[A-Za-z0-9]{40,}",
    "figma_token": r"\bfigd_[\w\-]{40,}",
    "alibaba_key_id": r"\bLTAI[A-Za-z0-9]{20}\b",
    "mailgun_key": r"\bkey-[0-9a-f]{32}\b",
    "twilio_api_key": r"\bSK[0-9a-f]{32}\b",
    "discord_token": r"\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6,7}\.[A-Za-z0-9_\-]{27,40}",
    "jwt": r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    # Prefixes of gitleaks' newer rules this table lacked (the fourth red team's families).
    "telegram_bot_token": r"\b\d{8,10}:AA[A-Za-z0-9_\-]{30,}",
    "fcm_server_key": r"\bAAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{60,}",
    "wandb_key": r"\bwandb_v1_[A-Za-z0-9_\-]{40,}|\blocal-[0-9a-f]{40}\b",
    "aws_other_key_id": r"\b(?:AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
    "amazon_mws_key": r"\bamzn\.mws\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "facebook_token": r"\bEAA(?:CEdEose0cBA|[A-Za-z0-9]{4})[A-Za-z0-9]{30,}",
    "dynatrace_token": r"\bdt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b",
    "heroku_token": r"\bHRKU-[\w\-]{30,}",
    "onepassword_token": r"\bops_eyJ[\w\-]{40,}",
    "airtable_token": r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b",
    "rubygems_token": r"\brubygems_[0-9a-f]{48}\b",
    "nuget_key": r"\boy2[a-z0-9]{43}\b",
    "prefect_token": r"\bpnu_[A-Za-z0-9]{36}\b",
    "clojars_token": r"\bCLOJARS_[a-z0-9]{60}\b",
    "flyio_token": r"\bFlyV1 fm[12][\w\-=+/,]{40,}|\bfm[12][ar]?_[\w\-=+/]{40,}",
    "scaleway_key": r"\bSCW[A-Z0-9]{17}\b",
    "atlassian_connect": r"\bATCTT3[\w\-=]{50,}",
    "mailchimp_key": r"\b[0-9a-f]{32}-us\d{1,2}\b",
    # More of gitleaks' vendor families: Fly.io's org tokens, Render, Mapbox's secret
    # tokens, Shippo, Netlify, Dropbox's short-lived tokens.
    "flyio_org_token": r"\bfo1_[\w\-]{40,}",
    "render_key": r"\brnd_[A-Za-z0-9]{32,}\b",
    "mapbox_secret": r"\bsk\.eyJ[\w\-.]{60,}",
    "shippo_token": r"\bshippo_(?:live|test)_[0-9a-f]{40}\b",
    "netlify_token": r"\bnfp_[A-Za-z0-9]{36,}\b",
    "dropbox_token": r"\bsl\.[\w\-=]{130,}",
}
# One alternative per pattern's first characters (case-sensitive, like the patterns).
PREFIX_HINT = (
    r"sk-|[sr]k_|whsec_|npm_|pypi-|SG\.|ya29\.|1//0|GOCSPX-|gh[pousr]_|github_pat_|hf_"
    r"|api_org_|AIza|AKIA|ASIA|xox|xapp-|gl[a-z]+[_\-]|GR1348941|(?:gsk|fw|xai|pplx|nvapi|r8"
    r"|pcsk|tvly|jina|csk)[_\-]|dapi[0-9a-f]|do[opr]_v1_|AGE-SECRET|shp|lin_|\.atlasv1\."
    r"|hv[sb]\.|dp\.|PMAK-|dckr_|NR[AIJR]|sntr|pscale_|sbp_|pul-|tskey-|lsv2_|ATATT3"
    r"|xkeysib-|sq0|EAAA|ntn_|figd_|LTAI|key-|SK[0-9a-f]|[MNO][A-Za-z0-9_\-]{23,27}\."
    r"|eyJ|\d{8,10}:AA|AAAA[A-Za-z0-9_\-]{7}:|wandb_v1_|local-[0-9a-f]|AGPA|AIDA|AROA|AIPA|ANPA"
    r"|ANVA|A3T|amzn\.|EAA|dt0c01\.|HRKU-|ops_|pat[A-Za-z0-9]{14}\.|rubygems_|oy2|pnu_"
    r"|CLOJARS_|FlyV1|fm[12]|SCW|ATCTT3|[0-9a-f]{32}-us|fo1_|rnd_|sk\.eyJ|shippo_|nfp_|sl\."
)
