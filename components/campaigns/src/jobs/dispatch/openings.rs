//! A chatapp iteration's claimed members: each one's opening message,
//! sent as `POST /messages` sends one, and recorded as an activity of the
//! campaign.

use super::*;
use claim::{pause, skip, DueMember};

/// The opening message of each due member of a chatapp iteration, through
/// the same outbound path as `POST /messages` (the agent's assigned number,
/// the delivery job, delivery events and webhooks), its placeholders filled
/// by the agent runtime's template language. A member whose contact is
/// blocked, out of the agent's scope or without a value the message uses
/// is skipped (so is every member when the message breaks the language's
/// rules, an unclosed `{{` for one).
pub(super) fn send_openings(biz: &str, iteration_id: &str, it: &Iteration, now_ms: i64, due: &[DueMember]) -> Result<(), Failure> {
    use switchboard_agent_runtime::template;
    use switchboard_messaging_area::conversation;
    use switchboard_voice_area::resolve;
    let Some(sender) = crate::campaigns::sender(biz, &it.agent_id)? else {
        return pause(biz, iteration_id, "agent_not_assigned");
    };
    let agent = resolve::Agent { id: it.agent_id.clone(), name: String::new(), instructions: String::new(), contact_required: true, settings: Default::default() };
    let opening = it.opening.clone().unwrap_or_default();
    let open_until = now_ms + REPLY_WINDOW_MINUTES * model::minute_ms()?;
    for m in due {
        let (member, claim) = (m.id.as_str(), m.claim + 1);
        let text = match resolve::contact(biz, &agent, &m.contact_id) {
            Err(f) if f.status >= 500 => return Err(f),
            Err(_) => None,
            Ok(target) => template::fill(&opening, &target.values).ok().map(|text| (target, text)),
        };
        let Some((target, text)) = text else {
            skip(biz, iteration_id, member, claim)?;
            continue;
        };
        let now = now();
        let conversation_id = conversation::conversation(biz, &sender, &target.id, &now)?;
        let (message_id, _, _) = conversation::queue_outbound(&conversation::Outbound {
            business: biz,
            channel: Channel::Chatapp,
            conversation_id: &conversation_id,
            contact_id: Some(&target.id),
            phone_number_id: &sender,
            recipient: &target.mobile,
            kind: "text",
            text: Some(text),
            media_id: None,
            now: &now,
        })?;
        db::execute(
            "UPDATE campaign_members SET outcome = 'in_progress', attempts = attempts + 1, claim = ?4, message_id = ?5, open_until_ms = ?6, retry_at_ms = NULL, updated_at = ?7 \
             WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3",
            &params![biz, iteration_id, member, claim, &message_id, open_until, &now],
        )?;
        // Every opening is an activity of the campaign, retries included.
        db::execute(
            "INSERT INTO campaign_openings (business_id, message_id, campaign_id, iteration_id, member_id, contact_id, contact_name) \
             SELECT business_id, ?3, campaign_id, iteration_id, id, contact_id, contact_name FROM campaign_members WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?4",
            &params![biz, iteration_id, message_id, member],
        )?;
        model::record(biz, member, "in_progress")?;
    }
    Ok(())
}
