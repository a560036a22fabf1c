//! A share's page in the console (`/admin/t/{tenant}/s/{share}`): its
//! settings, resources (the upload form is in `upload.rs`), code batches
//! (issue, revoke unused).

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use model::ShareStatus;
use uuid::Uuid;

use super::{
    ConsoleError, ConsoleNav,
    dashboard::OptionalField,
    param_id,
    upload::{Upload, UploadState},
};
use crate::{
    components::form::{FieldError, FormAlert},
    console::{
        codes::{RevokeUnused, SetBatchExpiry},
        issued::IssueCodes,
        share::{
            BatchView, DeleteResource, MoveResource, RenameResource, ShareEditor, UpdateShare,
            share_settings,
        },
    },
    error::AppError,
    i18n::{lang, resource_kind, t},
    learner::human_size,
};

#[component]
pub fn ShareAdminPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let share = param_id("share");
    let batch_actions = BatchActions {
        revoke: ServerAction::new(),
        expiry: ServerAction::new(),
    };
    let update = ServerAction::<UpdateShare>::new();
    let actions = ResourceActions {
        rename: ServerAction::new(),
        moves: ServerAction::new(),
        delete: ServerAction::new(),
        uploaded: RwSignal::new(0),
        upload: RwSignal::new(UploadState::Idle),
    };
    let data = Resource::new(
        move || {
            (
                tenant(),
                share(),
                batch_actions.versions(),
                update.version().get(),
                actions.versions(),
            )
        },
        |(tenant, share, _, _, _)| async move {
            match (tenant, share) {
                (Some(t), Some(s)) => share_settings(t, s).await,
                _ => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let here = format!(
                    "/admin/t/{}/s/{}",
                    tenant().map(|t| t.to_string()).unwrap_or_default(),
                    share().map(|s| s.to_string()).unwrap_or_default()
                );
                match data.await {
                    Ok(editor) => view! { <Editor editor batch_actions update actions/> }.into_any(),
                    Err(error) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// What an admin does to a batch from the share's page.
#[derive(Clone, Copy)]
struct BatchActions {
    revoke: ServerAction<RevokeUnused>,
    expiry: ServerAction<SetBatchExpiry>,
}

impl BatchActions {
    /// Changes whenever one of them completed: the page reloads.
    fn versions(&self) -> (usize, usize) {
        (self.revoke.version().get(), self.expiry.version().get())
    }
}

#[component]
fn Editor(
    editor: ShareEditor,
    batch_actions: BatchActions,
    update: ServerAction<UpdateShare>,
    actions: ResourceActions,
) -> impl IntoView {
    let tenant = editor.tenant_id;
    let share = editor.id;
    let link = format!("/s/{}", editor.slug);
    view! {
        <Title text=editor.title.clone()/>
        <ConsoleNav tenant/>
        <h1>{editor.title.clone()}</h1>
        <p class="share-link">
            {t(Msg::LearnersLink)}<a href=link.clone() id="share-link">{link.clone()}</a>" "
            <CopyButton path=link/>
            " · "<a href=format!("/admin/t/{tenant}/s/{share}/codes")>{t(Msg::CodeTable)}</a>
            " · "<a href=format!("/admin/t/{tenant}/s/{share}/learners")>{t(Msg::LearnersAndRecords)}</a>
            " · "<a href=format!("/admin/t/{tenant}/s/{share}/sales")>{t(Msg::SalesAndRefunds)}</a>
        </p>
        {editor.read_only.then(|| view! {
            <p class="flash info read-only-note" role="status">{t(Msg::YouCanLookAtThisShare)}</p>
        })}
        // Support reads the forms with everything in them disabled (the
        // server refuses their posts anyway).
        <fieldset class="bare" disabled=editor.read_only>
            // Type-erased: the whole editor as one type is too deep for the
            // compiler's layout queries.
            {view! {
                <div class="console-grid">
                    <Settings editor=editor.clone() action=update/>
                    <div class="stack">
                        <Resources tenant share resources=editor.resources.clone() actions/>
                        <Codes tenant share ticket=editor.issue_ticket batches=editor.batches.clone()
                            time_zone=editor.time_zone.clone() actions=batch_actions/>
                    </div>
                </div>
            }.into_any()}
        </fieldset>
    }
}

/// Copies the absolute link (needs the hydrated page; without JavaScript
/// the link next to it can be copied by hand).
#[component]
fn CopyButton(path: String) -> impl IntoView {
    let copied = RwSignal::new(false);
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let window = leptos::prelude::window();
            let origin = window.location().origin().unwrap_or_default();
            let _ = window
                .navigator()
                .clipboard()
                .write_text(&format!("{origin}{path}"));
            copied.set(true);
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = &path;
    };
    view! {
        <button type="button" class="link-button copy" on:click=copy>
            {move || if copied.get() { t(Msg::Copied) } else { t(Msg::CopyLink) }}
        </button>
    }
}

#[component]
fn Settings(editor: ShareEditor, action: ServerAction<UpdateShare>) -> impl IntoView {
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    let status = editor.status;
    let option = move |value: ShareStatus, label: &'static str| {
        view! { <option value=value.as_str() selected=status == value>{label}</option> }
    };
    view! {
        <section class="card">
            <h2>{t(Msg::Settings)}</h2>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <input type="hidden" name="tenant_id" value=editor.tenant_id.to_string()/>
                <input type="hidden" name="share_id" value=editor.id.to_string()/>
                <OptionalField name="title" label=t(Msg::Title) value=editor.title.clone() error/>
                <OptionalField name="slug" label=t(Msg::LinkName) value=editor.slug.clone()
                    hint=t(Msg::FixedOnceCodesAreIssuedPrinted) error/>
                <div class="field">
                    <label for="description">{t(Msg::Description)}</label>
                    <textarea id="description" name="description" rows="4" maxlength="10000">{editor.description.clone()}</textarea>
                    <FieldError error field="description"/>
                </div>
                <div class="field">
                    <label for="status">{t(Msg::Status)}</label>
                    <select id="status" name="status">
                        {ShareStatus::ALL.iter().map(|&value| option(value, status_choice(value))).collect_view()}
                    </select>
                    // What the select showed: left as it is, a pause made
                    // meanwhile is kept.
                    <input type="hidden" name="status_seen" value=status.as_str()/>
                    <FieldError error field="status"/>
                </div>
                <div class="field-row">
                    <OptionalField name="valid_from" label=lang().format(Msg::Opens, &[("time_zone", &editor.time_zone)]) kind="datetime-local" value=editor.valid_from.clone() error/>
                    <OptionalField name="valid_until" label=lang().format(Msg::Closes, &[("time_zone", &editor.time_zone)]) kind="datetime-local" value=editor.valid_until.clone() error/>
                </div>
                <div class="field-row">
                    <OptionalField name="per_learner_limit" label=t(Msg::AccessesPerLearner) kind="number"
                        value=editor.per_learner_limit.clone() hint=t(Msg::EmptyUnlimited) error/>
                    <OptionalField name="quota" label=t(Msg::AccessesInAll) kind="number"
                        value=editor.quota.clone() hint=t(Msg::EmptyUnlimitedCountedOncePerLearner) error/>
                </div>
                <OptionalField name="access_days" label=t(Msg::AccessPeriodDays) kind="number"
                    value=editor.access_days.clone() hint=t(Msg::EmptyForGoodCountedPerLearner) error/>
                // Learners exist once an access was counted (a binding is one).
                {(editor.quota_used > 0).then(|| view! {
                    <label class="check">
                        <input type="checkbox" name="confirm_period" value="yes"/>
                        " "{t(Msg::IfAShorterPeriodEndsSome)}
                    </label>
                })}
                <p class="hint">{lang().format(Msg::AccessesCountedSoFar, &[("quota_used", &editor.quota_used)])}</p>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t(Msg::Save)}</button>
                <p class="saved" role="status">
                    {move || matches!(action.value().get(), Some(Ok(()))).then_some(t(Msg::Saved))}
                </p>
            </ActionForm>
        </section>
    }
}

/// The resource list's actions (one of each per page, so the list
/// refreshes after any of them).
#[derive(Clone, Copy)]
struct ResourceActions {
    rename: ServerAction<RenameResource>,
    moves: ServerAction<MoveResource>,
    delete: ServerAction<DeleteResource>,
    /// Bumped after each upload made in the page (with JavaScript).
    uploaded: RwSignal<usize>,
    /// The upload form's progress and result; kept here, above the list,
    /// so the message survives the list's refresh.
    upload: RwSignal<UploadState>,
}

impl ResourceActions {
    fn versions(&self) -> (usize, usize, usize, usize) {
        (
            self.rename.version().get(),
            self.moves.version().get(),
            self.delete.version().get(),
            self.uploaded.get(),
        )
    }

    fn error(&self) -> Option<AppError> {
        self.delete
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| self.rename.value().get().and_then(Result::err))
            .or_else(|| self.moves.value().get().and_then(Result::err))
    }
}

#[component]
fn Resources(
    tenant: uuid::Uuid,
    share: uuid::Uuid,
    resources: Vec<crate::learner::ResourceItem>,
    actions: ResourceActions,
) -> impl IntoView {
    let error = Signal::derive(move || actions.error());
    let hidden = move |id: uuid::Uuid| {
        view! {
            <input type="hidden" name="tenant_id" value=tenant.to_string()/>
            <input type="hidden" name="share_id" value=share.to_string()/>
            <input type="hidden" name="resource_id" value=id.to_string()/>
        }
    };
    view! {
        <section class="card">
            <h2>{t(Msg::Resources)}</h2>
            <FormAlert error/>
            <FieldError error field="force"/>
            {if resources.is_empty() {
                view! { <p class="muted">{t(Msg::NothingUploadedYet)}</p> }.into_any()
            } else {
                view! {
                    <ul class="resource-list admin-resources">
                        {resources.into_iter().map(|r| {
                            let up = lang().format(Msg::MoveUp, &[("title", &r.title)]);
                            let down = lang().format(Msg::MoveDown, &[("title", &r.title)]);
                            view! {
                            <li class="resource" data-resource=r.id.to_string()>
                                <span class="tag">{resource_kind(r.kind)}</span>
                                <a class="resource-title" href=format!("/admin/t/{tenant}/s/{share}/r/{}/preview", r.id) target="_blank">{r.title.clone()}</a>
                                <span class="muted">{human_size(r.size_bytes)}</span>
                                <span class="resource-actions">
                                    <ActionForm action=actions.moves attr:class="inline-form">
                                        {hidden(r.id)}
                                        <input type="hidden" name="direction" value="up"/>
                                        <button type="submit" class="link-button" aria-label=up>"↑"</button>
                                    </ActionForm>
                                    <ActionForm action=actions.moves attr:class="inline-form">
                                        {hidden(r.id)}
                                        <input type="hidden" name="direction" value="down"/>
                                        <button type="submit" class="link-button" aria-label=down>"↓"</button>
                                    </ActionForm>
                                    <details class="resource-edit">
                                        <summary>{t(Msg::RenameOrRemove)}</summary>
                                        <ActionForm action=actions.rename attr:class="form compact">
                                            {hidden(r.id)}
                                            <label for=format!("rename-{}", r.id)>{t(Msg::NewTitle)}</label>
                                            <input id=format!("rename-{}", r.id) name="title" value=r.title.clone() required=true maxlength="200"/>
                                            <button type="submit" class="button small secondary">{t(Msg::Rename)}</button>
                                        </ActionForm>
                                        <ActionForm action=actions.delete attr:class="form compact">
                                            {hidden(r.id)}
                                            <label class="check">
                                                <input type="checkbox" name="force" value="on"/>
                                                {t(Msg::RemoveAnywayEvenIfLearnersOpened)}
                                            </label>
                                            <button type="submit" class="button small danger">{t(Msg::Remove)}</button>
                                        </ActionForm>
                                    </details>
                                </span>
                            </li>
                        }}).collect_view()}
                    </ul>
                }.into_any()
            }}
            <Upload tenant share uploaded=actions.uploaded state=actions.upload/>
        </section>
    }
}

#[component]
fn Codes(
    tenant: uuid::Uuid,
    share: uuid::Uuid,
    ticket: uuid::Uuid,
    batches: Vec<BatchView>,
    /// The tenant's time zone: what the expiry inputs are in.
    time_zone: String,
    actions: BatchActions,
) -> impl IntoView {
    let BatchActions { revoke, expiry } = actions;
    let issue = ServerAction::<IssueCodes>::new();
    let error = Signal::derive(move || issue.value().get().and_then(Result::err));
    let progress = progress_of(tenant, ticket, issue.pending().into());
    let revoke_error = Signal::derive(move || {
        revoke
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| expiry.value().get().and_then(Result::err))
    });
    let expires_label = lang().format(Msg::UnusedCodesExpire, &[("time_zone", &time_zone)]);
    let batch_expires_label = expires_label.clone();
    view! {
        <section class="card">
            <h2>{t(Msg::AccessCodes)}</h2>
            <FormAlert error/>
            <ActionForm action=issue attr:class="form">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <input type="hidden" name="share_id" value=share.to_string()/>
                <input type="hidden" name="ticket" value=ticket.to_string()/>
                <div class="field-row">
                    <OptionalField name="count" label=t(Msg::HowMany) kind="number" value="20" error/>
                    <OptionalField name="label" label=t(Msg::Label) hint=t(Msg::EGTheClassOrThe) error/>
                </div>
                <OptionalField name="expires_at" label=expires_label.clone() kind="datetime-local"
                    hint=t(Msg::EmptyNeverBoundCodesKeepWorking) error/>
                <label class="check">
                    <input type="checkbox" name="mailable" value="yes"/>
                    {t(Msg::ToSendByMail)}
                </label>
                <p class="hint">{t(Msg::TheCodesAreShownOnceOn)}</p>
                <button type="submit" class="button" disabled=move || issue.pending().get()>
                    {move || if issue.pending().get() { t(Msg::Issuing) } else { t(Msg::IssueCodes) }}
                </button>
                {move || issue.pending().get().then(|| {
                    written(progress.get(), Msg::Starting, "issue-progress")
                })}
            </ActionForm>
            <super::imports::ImportForm tenant share ticket/>
            <FormAlert error=revoke_error/>
            <FieldError error=revoke_error field="confirm"/>
            <FieldError error=revoke_error field="expires_at"/>
            {(!batches.is_empty()).then(|| view! {
                <h3>{t(Msg::Batches)}</h3>
                <ul class="batch-list">
                    {batches.into_iter().map(|b| {
                        let batch_name = if b.label.is_empty() {
                            lang().format(Msg::NoLabel, &[("created", &b.created)])
                        } else {
                            b.label.clone()
                        };
                        let expires = b.expires.as_ref().map(|when| {
                            let msg = if b.expired { Msg::BatchExpiredOn } else { Msg::BatchExpiresOn };
                            lang().format(msg, &[("when", when)])
                        });
                        let expiry_input_id = format!("batch-expires-{}", b.id);
                        let expires_label = batch_expires_label.clone();
                        view! {
                        <li>
                            <a href=format!("/admin/t/{tenant}/s/{share}/codes?batch={}", b.id)>
                                {batch_name.clone()}
                            </a>
                            <span class="muted">{lang().format(Msg::Codes2, &[("count", &b.count), ("created", &b.created)])}{expires}</span>
                            {b.mailable.then(|| view! {
                                " "
                                <a class="button small secondary" href=format!("/admin/t/{tenant}/s/{share}/batches/{}/mail", b.id)>
                                    {t(Msg::SendByMail)}
                                </a>
                            })}
                            <details class="expiry">
                                <summary aria-label=lang().format(Msg::ChangeExpiryOfBatch, &[("batch_name", &batch_name)])>{t(Msg::ExpiryDate)}</summary>
                                <ActionForm action=expiry attr:class="form compact">
                                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                    <input type="hidden" name="batch_id" value=b.id.to_string()/>
                                    <label for=expiry_input_id.clone()>{expires_label.clone()}</label>
                                    <input id=expiry_input_id type="datetime-local" name="expires_at" value=b.expires_input.clone()/>
                                    <p class="hint">{t(Msg::EmptyNeverBoundCodesKeepWorking)}</p>
                                    <button type="submit" class="button small">{t(Msg::Save)}</button>
                                </ActionForm>
                            </details>
                            <details class="confirm-action">
                                <summary aria-label=lang().format(Msg::RevokeTheUnusedCodesOfBatch, &[("batch_name", &batch_name)])>{t(Msg::RevokeUnused)}</summary>
                                <ActionForm action=revoke attr:class="form compact">
                                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                    <input type="hidden" name="batch_id" value=b.id.to_string()/>
                                    <label class="check">
                                        <input type="checkbox" name="confirm" value="yes" required=true/>
                                        {t(Msg::IUnderstandThatThisBatchS)}
                                    </label>
                                    <button type="submit" class="button small danger">{t(Msg::RevokeUnused2)}</button>
                                </ActionForm>
                            </details>
                        </li>
                        }
                    }).collect_view()}
                </ul>
            })}
        </section>
    }
}

/// A number of codes with thousands separators.
fn number_u64(n: u64) -> String {
    crate::i18n::number(i64::try_from(n).unwrap_or(i64::MAX))
}

/// The progress bar of codes written so far (issuing, importing): `before`
/// until the first report.
pub(super) fn written(
    progress: Option<(u64, u64)>,
    before: Msg,
    testid: &'static str,
) -> impl IntoView {
    let (done, total) = progress.unwrap_or((0, 0));
    let text = if total == 0 {
        t(before).to_owned()
    } else {
        lang().format(
            Msg::OfCodesWritten,
            &[("done", &number_u64(done)), ("total", &number_u64(total))],
        )
    };
    view! {
        <div class="progress" role="status" data-testid=testid>
            <progress max=total.max(1).to_string() value=done.to_string()></progress>
            <span>{text}</span>
        </div>
    }
}

/// While `running` (issuing, or an import's form being sent), polls how
/// many codes the server has written under `ticket` (in the browser only;
/// a page without JavaScript just waits for the result page).
pub(super) fn progress_of(
    tenant: Uuid,
    ticket: Uuid,
    running: Signal<bool>,
) -> ReadSignal<Option<(u64, u64)>> {
    let (progress, set_progress) = signal(None::<(u64, u64)>);
    #[cfg(feature = "hydrate")]
    Effect::new(move |previous: Option<Option<IntervalHandle>>| {
        if let Some(Some(handle)) = previous {
            handle.clear();
        }
        if !running.get() {
            set_progress.set(None);
            return None;
        }
        set_interval_with_handle(
            move || {
                leptos::task::spawn_local(async move {
                    if let Ok(Some(now)) =
                        crate::console::issued::issue_progress(tenant, ticket).await
                        && running.get_untracked()
                    {
                        set_progress.set(Some(now));
                    }
                });
            },
            std::time::Duration::from_millis(250),
        )
        .ok()
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (tenant, ticket, running, set_progress);
    progress
}

/// A status as the editor offers it: with what it means for learners.
fn status_choice(status: ShareStatus) -> &'static str {
    match status {
        ShareStatus::Draft => t(Msg::DraftHiddenFromLearners),
        ShareStatus::Active => t(Msg::Active),
        ShareStatus::Paused => t(Msg::PausedNobodyCanOpenIt),
        ShareStatus::Archived => t(Msg::ArchivedGoneForLearners),
    }
}
