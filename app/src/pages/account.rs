//! The signed-in account: change password, sign out everywhere.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::Redirect;

use crate::{
    auth::{ChangePassword, LogoutAll, whoami},
    components::form::{Field, FormAlert},
};

#[component]
pub fn AccountPage() -> impl IntoView {
    let user = Resource::new(|| (), |_| whoami());
    view! {
        <Title text="Your account"/>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match user.await {
                    Ok(Some(user)) => view! {
                        <h1>"Your account"</h1>
                        <p class="muted">{user.display_name}" · "{user.email}</p>
                        <div class="cards">
                            <ChangePasswordForm/>
                            <SignOutEverywhere/>
                        </div>
                    }.into_any(),
                    Ok(None) => view! { <Redirect path="/login?next=/account"/> }.into_any(),
                    Err(error) => view! { <div class="flash error" role="alert">{error.to_string()}</div> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn ChangePasswordForm() -> impl IntoView {
    let action = ServerAction::<ChangePassword>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>"Change password"</h2>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <Field name="current_password" label="Current password" kind="password"
                    autocomplete="current-password" error/>
                <Field name="new_password" label="New password" kind="password" autocomplete="new-password"
                    minlength=10 hint="At least 10 characters." error/>
                <Field name="new_password_confirm" label="Repeat the new password" kind="password"
                    autocomplete="new-password" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>"Change password"</button>
            </ActionForm>
            <p class="hint">"Changing your password signs you out on your other devices."</p>
        </section>
    }
}

#[component]
fn SignOutEverywhere() -> impl IntoView {
    let action = ServerAction::<LogoutAll>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>"Sign out everywhere"</h2>
            <p>"Lost a device, or signed in on a shared computer? End every session of this account, this one included."</p>
            <FormAlert error/>
            <ActionForm action=action>
                <button type="submit" class="button danger" disabled=move || action.pending().get()>"Sign out everywhere"</button>
            </ActionForm>
        </section>
    }
}
