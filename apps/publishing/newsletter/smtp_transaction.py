"""The newsletter sender's own SMTP transaction for one recipient of a prepared message (sending.py
sends through it when the message and its address allow): what smtplib's SMTP.sendmail() does,
without redoing per message the work that is the same for a whole edition."""

import contextlib
import functools
import re
import smtplib

from apps.publishing.newsletter import message

# An address smtplib's quoteaddr() would give back as it is, in angle brackets: a dot-atom local
# part and a domain of letters, digits, dots and hyphens (ASCII), the form nearly all addresses have.
PLAIN_ADDRESS = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*"
)


# The sender's address in its angle brackets, as smtplib writes it, worked out once per sender (it
# carries the newsletter's name: "Field Notes <news@example.com>").
_quoted = functools.lru_cache(maxsize=16)(smtplib.quoteaddr)


def sendmail(smtp: smtplib.SMTP, prepared: message.Serialized) -> None:
    """smtplib's SMTP.sendmail() for one recipient of a prepared message whose bytes are dot-stuffed
    already and whose recipient's address is plain (PLAIN_ADDRESS): the same commands, replies and
    errors, without parsing both addresses again (about 12 us a message) and searching the 7 kB for lines to
    stuff (about 25 us), which sendmail() does to every message. (Its SIZE counts the stuffed bytes:
    at most a few more than the message's, as a declared size may be.)"""
    smtp.ehlo_or_helo_if_needed()
    size = f" size={len(prepared.data)}" if smtp.does_esmtp and smtp.has_extn("size") else ""
    code, reply = smtp.docmd("mail", f"FROM:{_quoted(prepared.from_address)}{size}")
    if code != 250:
        _abandon(smtp, code)
        raise smtplib.SMTPSenderRefused(code, reply, prepared.from_address)
    code, reply = smtp.docmd("rcpt", f"TO:<{prepared.to_address}>")
    if code not in (250, 251):
        _abandon(smtp, code)
        raise smtplib.SMTPRecipientsRefused({prepared.to_address: (code, reply)})
    code, reply = smtp.docmd("data")
    if code != 354:
        raise smtplib.SMTPDataError(code, reply)
    smtp.send(prepared.data + (b".\r\n" if prepared.data.endswith(b"\r\n") else b"\r\n.\r\n"))
    code, reply = smtp.getreply()
    if code != 250:
        _abandon(smtp, code)
        raise smtplib.SMTPDataError(code, reply)


def _abandon(smtp: smtplib.SMTP, code: int) -> None:
    """What sendmail() does to a refused transaction: a 421 closes the connection, any other reply
    is followed by RSET (a server that went away meanwhile is left as it is)."""
    if code == 421:
        smtp.close()
        return
    with contextlib.suppress(smtplib.SMTPServerDisconnected):
        smtp.rset()
