//! The console's entry: the tenants the account is a member of, with its
//! role in each (each one's pages are in `pages::console`), and, where the
//! server allows it (`tenants.self_signup`), a form to create a tenant of
//! one's own.

use crate::i18n::Msg;
use leptos::prelude::*;

use crate::components::ErrorFlash;
use leptos_meta::Title;

use crate::{
    components::form::{Field, FormAlert},
    console::dashboard::my_tenants,
    error::AppError,
    i18n::t,
    membership::{CreateTenant, tenant_signup_open},
    pages::console::team::role_name,
};

#[component]
pub fn ConsoleHome() -> impl IntoView {
    let tenants = Resource::new(|| (), |_| my_tenants());
    let signup = Resource::new(|| (), |_| tenant_signup_open());
    view! {
        <Title text=t(Msg::Console)/>
        <h1>{t(Msg::Console)}</h1>
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let open = signup.await.unwrap_or(false);
                match tenants.await {
                    Ok(list) => view! {
                        {if list.is_empty() {
                            view! {
                                <p>{t(Msg::YouAreNotOnAnyTenant)}</p>
                            }.into_any()
                        } else {
                            view! {
                                <ul class="tenant-list">
                                    {list.into_iter().map(|t| view! {
                                        <li><a href=format!("/admin/t/{}", t.id)>{t.name}</a>" "<span class="muted">{t.slug}" · "{role_name(t.role)}</span></li>
                                    }).collect_view()}
                                </ul>
                            }.into_any()
                        }}
                        {open.then(|| view! { <NewTenant/> })}
                    }.into_any(),
                    Err(AppError::Unauthenticated) => view! { <crate::components::SignInFirst next="/admin"/> }.into_any(),
                    Err(error) => view! { <ErrorFlash error/> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// "Create a tenant": its name and its address; the creator owns it.
#[component]
fn NewTenant() -> impl IntoView {
    let create = ServerAction::<CreateTenant>::new();
    let error = Signal::derive(move || create.value().get().and_then(Result::err));
    view! {
        <section class="card new-tenant">
            <h2>{t(Msg::CreateATenant)}</h2>
            <p class="muted">{t(Msg::ATenantIsYourWorkspaceFor)}</p>
            <FormAlert error/>
            <ActionForm action=create attr:class="form narrow">
                <Field name="name" label=t(Msg::Name) maxlength=120 error/>
                <Field name="slug" label=t(Msg::Address) maxlength=48
                    hint=t(Msg::LowerCaseLettersDigitsAndDashes) error/>
                <button type="submit" class="button" disabled=move || create.pending().get()>{t(Msg::CreateTheTenant)}</button>
            </ActionForm>
        </section>
    }
}
